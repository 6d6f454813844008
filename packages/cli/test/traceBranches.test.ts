import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { formatTraceReport, runTrace, traceJson, type TraceOptions } from '../src/commands/trace.ts';

const root = fileURLToPath(new URL('../../../', import.meta.url));
const tmp = mkdtempSync(join(tmpdir(), 'netsim-branches-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

function netsim(args: readonly string[], input?: string) {
  return spawnSync(process.execPath, ['--import', 'tsx', 'packages/cli/src/bin.ts', ...args], { cwd: root, encoding: 'utf8', input });
}

const SVC = `*nat
:PREROUTING ACCEPT [0:0]
:INPUT ACCEPT [0:0]
:OUTPUT ACCEPT [0:0]
:POSTROUTING ACCEPT [0:0]
:KUBE-SVC-A - [0:0]
:LOG - [0:0]
-A PREROUTING -d 198.18.0.10/32 -p tcp -m tcp --dport 80 -j KUBE-SVC-A
-A POSTROUTING -m mark --mark 0x4000/0x4000 -j MASQUERADE
-A KUBE-SVC-A -j MARK --or-mark 0x4000
-A KUBE-SVC-A -p tcp -m statistic --mode random --probability 0.25000000000 -j DNAT --to-destination 203.0.113.1:8080
-A KUBE-SVC-A -p tcp -j DNAT --to-destination 203.0.113.2:8080
-A LOG -p tcp -j DNAT --to-destination 203.0.113.9:80
COMMIT
`;
const rules = join(tmp, 'svc.rules');
writeFileSync(rules, SVC);
function opts(over: Partial<TraceOptions>): TraceOptions {
  return { ruleset: rules, packet: 'tcp 192.0.2.7:40000 > 198.18.0.10:80 in eth0', localAddress: [], ctstate: 'NEW', ctmark: 0, seed: 1, unknown: 'stop', skipNat: false, all: false, json: false, ...over };
}
const HOST = ['hostname node', 'ip link add eth0 type physical', 'ip link set eth0 up', 'ip addr add 192.0.2.1/24 dev eth0', 'ip link add eth1 type physical', 'ip link set eth1 up', 'ip addr add 203.0.113.254/24 dev eth1', 'sysctl -w net.ipv4.ip_forward=1'];
const hostCmd = HOST.flatMap((l) => ['--host-cmd', l]);

describe('netsim trace --all-branches, --table/--chain', () => {
  it('should print every outcome of one hook with its exact probability', () => {
    const r = netsim(['trace', '--ruleset', rules, '--packet', 'tcp 192.0.2.7:40000 > 198.18.0.10:80 in eth0', '--all-branches', '--json']);
    expect(r.status).toBe(0);
    const j = JSON.parse(r.stdout) as { branches: { probability: string; nat: { toDestination: string }; mark: string }[] };
    expect(j.branches.map((b) => [b.probability, b.nat.toDestination, b.mark])).toEqual([
      ['1/4', '203.0.113.1:8080', '0x4000'],
      ['3/4', '203.0.113.2:8080', '0x4000'],
    ]);
  });

  it('should walk a whole host per outcome and report dnat, snat and masquerade, with the ruleset from stdin', () => {
    const r = netsim(['trace', ...hostCmd, '--ruleset', '-', '--packet', 'tcp 192.0.2.7:40000 > 198.18.0.10:80 in eth0', '--all-branches', '--json'], SVC);
    expect(r.stderr).toBe('');
    const j = JSON.parse(r.stdout) as { branches: { probability: string; fate: string; dnat: string; snat: string; masquerade: boolean }[] };
    expect(j.branches.map((b) => [b.probability, b.fate, b.dnat, b.snat, b.masquerade])).toEqual([
      ['1/4', 'forwarded', '203.0.113.1:8080', '203.0.113.254:40000', true],
      ['3/4', 'forwarded', '203.0.113.2:8080', '203.0.113.254:40000', true],
    ]);
  });

  it('should start at a user chain, even one named like a target extension, and say when the walk returns', () => {
    const log = runTrace(opts({ table: 'nat', chain: 'LOG', packet: 'tcp 192.0.2.7:40000 > 198.18.0.99:80 in eth0' }));
    expect(formatTraceReport(log, opts({}))).toContain('at nat LOG (from PREROUTING)');
    expect(log.result.nat).toMatchObject({ kind: 'DNAT' });
    const udp = runTrace(opts({ table: 'nat', chain: 'LOG', packet: 'udp 192.0.2.7:40000 > 198.18.0.99:80 in eth0' }));
    expect([udp.returned, (traceJson(udp) as { verdict: unknown }).verdict]).toEqual([true, { kind: 'RETURN' }]);
  });

  it('should refuse a missing chain, --chain without --table and a hook the table lacks, with exit 2', () => {
    const cases: [Partial<TraceOptions>, string][] = [
      [{ table: 'nat', chain: 'NOPE' }, '--chain NOPE: no such chain in table nat'],
      [{ chain: 'LOG' }, '--chain needs --table (the table the chain is in)'],
      [{ table: 'nat', chain: 'LOG', hook: 'FORWARD' }, '--hook FORWARD: the nat table has no FORWARD chain'],
      [{ table: 'nope' }, '--table "nope": expected raw, mangle, nat or filter'],
    ];
    for (const [over, message] of cases) expect(() => runTrace(opts(over))).toThrow(message);
    const r = netsim(['trace', '--ruleset', rules, '--packet', 'tcp 192.0.2.7:40000 > 198.18.0.10:80 in eth0', '--table', 'nat', '--chain', 'NOPE']);
    expect([r.status, r.stderr]).toEqual([2, 'netsim trace: --chain NOPE: no such chain in table nat\n']);
  });
});
