import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { parseSave } from '@netsim/netfilter';
import { formatTraceReport, formatTraceText, runTrace, traceJson, type TraceOptions } from '../src/commands/trace.ts';

const root = fileURLToPath(new URL('../../../', import.meta.url));
const fixture = join(root, 'docs/examples/kube-proxy-nodeport.rules');
const tmp = mkdtempSync(join(tmpdir(), 'netsim-trace-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

function opts(over: Partial<TraceOptions>): TraceOptions {
  return {
    ruleset: fixture,
    packet: 'tcp 203.0.113.7:40000 > 198.18.0.1:30080 in eth0',
    localAddress: ['198.18.0.1'],
    ctstate: 'NEW',
    ctmark: 0,
    seed: 1,
    unknown: 'stop',
    skipNat: false,
    all: false,
    json: false,
    ...over,
  };
}

function netsim(args: readonly string[], input?: string) {
  return spawnSync(process.execPath, ['--import', 'tsx', 'packages/cli/src/bin.ts', ...args], { cwd: root, encoding: 'utf8', input });
}

/** Splits a documented command line the way a POSIX shell does for plain words and '…' quoting. */
function shellWords(line: string): string[] {
  const words: string[] = [];
  const re = /'([^']*)'|(\S+)/g;
  for (let m = re.exec(line); m !== null; m = re.exec(line)) words.push(m[1] ?? m[2] ?? '');
  return words;
}

describe('netsim trace: the documented example', () => {
  it('should print exactly the output docs/netfilter.md shows for each documented command', () => {
    const doc = readFileSync(join(root, 'docs/netfilter.md'), 'utf8');
    const blocks = [...doc.matchAll(/```console\n\$ pnpm netsim (trace [^\n]*)\n([\s\S]*?)```/g)];
    expect(blocks.length).toBeGreaterThan(0);
    for (const [, command, output] of blocks) {
      const stdout = execFileSync(process.execPath, ['--import', 'tsx', 'packages/cli/src/bin.ts', ...shellWords(command ?? '')], { cwd: root, encoding: 'utf8' });
      expect(stdout).toBe(output);
    }
  });
});

describe('netsim trace: results', () => {
  it('should DNAT a NodePort SYN to an endpoint, mark it for masquerade and list the matched rules as -A lines', () => {
    const run = runTrace(opts({}));
    const j = traceJson(run) as { verdict: unknown; nat: unknown; mark: string; matched: { chain: string; index: number; rule: string }[] };
    expect(j.verdict).toEqual({ kind: 'ACCEPT' });
    expect(j.nat).toEqual({ kind: 'DNAT', toDestination: '10.244.2.7:8080', random: false, persistent: false });
    expect(j.mark).toBe('0x4000');
    expect(j.matched.map((m) => `${m.chain}:${m.index}`)).toEqual([
      'PREROUTING:1',
      'KUBE-SERVICES:3',
      'KUBE-NODEPORTS:1',
      'KUBE-EXT-2BZYIQJHGWRZ3L5Q:1',
      'KUBE-MARK-MASQ:1',
      'KUBE-EXT-2BZYIQJHGWRZ3L5Q:2',
      'KUBE-SVC-2BZYIQJHGWRZ3L5Q:3',
      'KUBE-SEP-N4G2XR5TDX7PQE7P:2',
    ]);
    expect(j.matched.at(-1)?.rule).toBe(
      '-A KUBE-SEP-N4G2XR5TDX7PQE7P -p tcp -m comment --comment "default/web:http" -m tcp -j DNAT --to-destination 10.244.2.7:8080',
    );
  });

  it('should pick endpoints as the seed says, the same way every time', () => {
    const endpoint = (seed: number) => (traceJson(runTrace(opts({ seed }))) as { nat: { toDestination: string } }).nat.toDestination;
    const seeds = Array.from({ length: 16 }, (_, i) => i + 1);
    const picks = seeds.map(endpoint);
    expect(seeds.map(endpoint)).toEqual(picks);
    expect(new Set(picks)).toEqual(new Set(['10.244.1.5:8080', '10.244.2.7:8080']));
  });

  it('should not NAT without --local-address (the NodePort jump needs --dst-type LOCAL) nor with --skip-nat', () => {
    expect(runTrace(opts({ localAddress: [] })).result.nat).toBeUndefined();
    expect(runTrace(opts({ skipNat: true })).result.nat).toBeUndefined();
  });

  it('should REJECT a forwarded SYN to a Service without endpoints', () => {
    const run = runTrace(opts({ packet: 'tcp 203.0.113.7:40000 > 10.96.0.50:80 in eth0 out cni0', hook: 'FORWARD' }));
    expect(run.result.verdict).toEqual({ kind: 'REJECT', with: 'icmp-port-unreachable' });
    expect(formatTraceReport(run, { ctstate: 'NEW', seed: 1, all: false })).toContain('verdict: REJECT --reject-with icmp-port-unreachable\n');
  });

  it('should show the rules that did not match with --all', () => {
    const text = formatTraceReport(runTrace(opts({ all: true })), { ctstate: 'NEW', seed: 1, all: true });
    expect(text).toContain('   no match nat:KUBE-SERVICES:rule:1  -A KUBE-SERVICES -d 10.96.0.1/32');
  });

  it('should log a fall-off return as return:N+1 and an explicit RETURN only as its rule', () => {
    const rs = parseSave('*filter\n:INPUT ACCEPT [0:0]\n:A - [0:0]\n:B - [0:0]\n-A INPUT -j A\n-A INPUT -j B\n-A A -j RETURN\n-A B -s 192.0.2.1/32 -j DROP\nCOMMIT\n');
    const lines = formatTraceText(
      rs,
      [
        { kind: 'rule', table: 'filter', chain: 'INPUT', index: 1, outcome: 'match' },
        { kind: 'rule', table: 'filter', chain: 'A', index: 1, outcome: 'match' },
        { kind: 'return', table: 'filter', chain: 'A' },
        { kind: 'rule', table: 'filter', chain: 'INPUT', index: 2, outcome: 'match' },
        { kind: 'rule', table: 'filter', chain: 'B', index: 1, outcome: 'nomatch' },
        { kind: 'return', table: 'filter', chain: 'B' },
        { kind: 'policy', table: 'filter', chain: 'INPUT', policy: 'ACCEPT' },
      ],
      false,
    );
    expect(lines).toEqual([
      'TRACE: filter:INPUT:rule:1  -A INPUT -j A',
      'TRACE: filter:A:rule:1  -A A -j RETURN',
      'TRACE: filter:INPUT:rule:2  -A INPUT -j B',
      'TRACE: filter:B:return:2',
      'TRACE: filter:INPUT:policy:3',
    ]);
  });

  it('should evaluate -m set against --ipset and report unknown modules per --unknown', () => {
    const rules = join(tmp, 'set.rules');
    writeFileSync(rules, '*filter\n:INPUT DROP [0:0]\n-A INPUT -m set --match-set allow src -j ACCEPT\n-A INPUT -m ttl --ttl-eq 5 -j ACCEPT\nCOMMIT\n');
    const sets = join(tmp, 'sets.txt');
    writeFileSync(sets, 'create allow hash:net family inet hashsize 1024 maxelem 65536\nadd allow 203.0.113.0/24\n');
    const base = { ruleset: rules, hook: 'INPUT' as const, packet: 'tcp 203.0.113.7:1 > 198.18.0.1:22 in eth0' };
    expect(runTrace(opts({ ...base, ipset: sets })).result.verdict).toEqual({ kind: 'ACCEPT' });
    const other = { ...base, ipset: sets, packet: 'tcp 192.0.2.9:1 > 198.18.0.1:22 in eth0' };
    expect(runTrace(opts(other)).result.verdict).toMatchObject({ kind: 'unknown', at: { chain: 'INPUT', index: 2 } });
    expect(runTrace(opts({ ...other, unknown: 'assume-nomatch' })).result.verdict).toEqual({ kind: 'DROP', byPolicy: true });
    const text = formatTraceReport(runTrace(opts(other)), { ctstate: 'NEW', seed: 1, all: false });
    expect(text).toContain('UNKNOWN: filter:INPUT:rule:2  -A INPUT -m ttl --ttl-eq 5 -j ACCEPT  [cannot evaluate ttl; walk stops]');
  });
});

describe('netsim trace: bad input', () => {
  it('should exit 2 with a message naming the file, line, column and token of a parse error', () => {
    const bad = join(tmp, 'bad.rules');
    writeFileSync(bad, '*filter\n-A INPUT -j BOGUS --x\nCOMMIT\n');
    const r = netsim(['trace', '--ruleset', bad, '--packet', 'tcp 1.2.3.4:1 > 5.6.7.8:2']);
    expect(r.status).toBe(2);
    expect(r.stderr).toBe(`netsim trace: parseSave: ${bad}:2:19: unknown option "--x" (at "--x")\n`);
  });

  it('should exit 2 for a missing file and for a bad packet, saying what is wrong', () => {
    const missing = netsim(['trace', '--ruleset', join(tmp, 'nope.rules'), '--packet', 'tcp 1.2.3.4:1 > 5.6.7.8:2']);
    expect(missing.status).toBe(2);
    expect(missing.stderr).toContain('cannot read ruleset');
    const packet = netsim(['trace', '--ruleset', '-', '--packet', 'tcp 1.2.3.4:1 => 5.6.7.8:2'], '*filter\nCOMMIT\n');
    expect(packet.status).toBe(2);
    expect(packet.stderr).toBe('netsim trace: packet "tcp 1.2.3.4:1 => 5.6.7.8:2": expected ">" between source and destination at column 15, got "=>"\n');
  });
});
