import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { hostTraceJson, runHostTrace } from '../src/commands/traceHost.ts';

const root = fileURLToPath(new URL('../../../', import.meta.url));
const hostFile = join(root, 'docs/examples/nodeport-node.host');
const tmp = mkdtempSync(join(tmpdir(), 'netsim-trace-host-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

function netsim(args: readonly string[]) {
  return spawnSync(process.execPath, ['--import', 'tsx', 'packages/cli/src/bin.ts', ...args], { cwd: root, encoding: 'utf8' });
}

function shellWords(line: string): string[] {
  const words: string[] = [];
  const re = /'([^']*)'|(\S+)/g;
  for (let m = re.exec(line); m !== null; m = re.exec(line)) words.push(m[1] ?? m[2] ?? '');
  return words;
}

describe('netsim trace --host', () => {
  it('should print exactly what docs/datapath.md shows for each documented command', () => {
    const doc = readFileSync(join(root, 'docs/datapath.md'), 'utf8');
    const blocks = [...doc.matchAll(/```console\n\$ pnpm netsim (trace [^\n]*)\n([\s\S]*?)```/g)];
    expect(blocks.length).toBeGreaterThan(0);
    for (const [, command, output] of blocks) {
      const stdout = execFileSync(process.execPath, ['--import', 'tsx', 'packages/cli/src/bin.ts', ...shellWords(command ?? '')], { cwd: root, encoding: 'utf8' });
      expect(stdout).toBe(output);
    }
  });

  it('should give fate, egress, matched rules and conntrack entries in --json', () => {
    const j = hostTraceJson(runHostTrace({ host: hostFile, packet: 'tcp 192.0.2.10:40000 > 198.51.100.10:30080 in eth0', seed: 1 })) as {
      fate: string;
      egress: { iface: string; src: string; dst: string; sport: number; dport: number } | null;
      matched: { table: string; chain: string; index: number; rule: string }[];
      conntrack: string[];
    };
    expect(j.fate).toBe('forwarded');
    expect(j.egress).toMatchObject({ iface: 'veth0', src: '203.0.113.1', dst: '203.0.113.10', dport: 8080 });
    expect(j.matched.at(-1)).toEqual({
      table: 'nat',
      chain: 'KUBE-POSTROUTING',
      index: 3,
      rule: '-A KUBE-POSTROUTING -m comment --comment "kubernetes service traffic requiring SNAT" -j MASQUERADE --random-fully',
    });
    expect(j.conntrack).toHaveLength(1);
    expect(j.conntrack[0]).toMatch(/^tcp {6}6 120 SYN_SENT src=192\.0\.2\.10 dst=198\.51\.100\.10 sport=40000 dport=30080 \[UNREPLIED\] src=203\.0\.113\.10 dst=203\.0\.113\.1 sport=8080 dport=\d+ mark=0 use=1$/);
  });

  it('should say delivered for the node own socket and dropped with the reason for a closed path', () => {
    expect(runHostTrace({ host: hostFile, packet: 'tcp 192.0.2.10:40000 > 198.51.100.10:22 in eth0', seed: 1 }).result.fate).toBe('delivered');
    const r = runHostTrace({ host: hostFile, packet: 'tcp 192.0.2.10:40000 > 203.0.113.10:8080 in veth0', seed: 1 }).result;
    expect([r.fate, r.reason]).toEqual(['dropped', 'route back to 192.0.2.10 leaves by eth0, not veth0 (rp_filter=1 on veth0)']);
  });

  it('should report a bad host file with file, line, column and token, and exit 2', () => {
    const bad = join(tmp, 'bad.host');
    writeFileSync(bad, 'ip link add eth0 type physical\nip link set eth0 up\nip addr add 198.51.100.10/24 dev eth0 bogus\n');
    const r = netsim(['trace', '--host', bad, '--packet', 'tcp 192.0.2.10:1 > 198.51.100.10:22 in eth0']);
    expect(r.status).toBe(2);
    expect(r.stderr).toBe(`netsim trace: ${bad}:3:39: Error: either "to" is duplicate, or "bogus" is a garbage.\n`);
  });

  it('should refuse --ruleset together with --host, and neither', () => {
    const both = netsim(['trace', '--host', hostFile, '--ruleset', hostFile, '--packet', 'tcp 192.0.2.10:1 > 198.51.100.10:22 in eth0']);
    expect([both.status, both.stderr]).toEqual([2, 'netsim trace: --host takes the ruleset from the host file; drop --ruleset\n']);
    const none = netsim(['trace', '--packet', 'tcp 192.0.2.10:1 > 198.51.100.10:22 in eth0']);
    expect([none.status, none.stderr]).toEqual([2, 'netsim trace: give --ruleset FILE (one hook of a dump) or --host FILE (a whole host)\n']);
  });
});

describe('netsim trace --host-cmd (the host given as flags)', () => {
  const lines = [
    'hostname node-b',
    'ip link add eth0 type physical',
    'ip link set eth0 up',
    'ip addr add 198.51.100.20/24 dev eth0',
    'ip link add veth0 type veth',
    'ip link set veth0 up',
    'ip addr add 203.0.113.129/25 dev veth0',
    'sysctl -w net.ipv4.ip_forward=1',
  ];
  const rules = [
    '*nat',
    ':PREROUTING ACCEPT [0:0]',
    '-A PREROUTING -d 198.51.100.20/32 -p tcp -m tcp --dport 61001 -j DNAT --to-destination 203.0.113.130:8080',
    'COMMIT',
    '',
  ].join('\n');

  it('should trace exactly as the same host given as a file', () => {
    const rulesFile = join(tmp, 'node-b.rules');
    writeFileSync(rulesFile, rules);
    const file = join(tmp, 'node-b.host');
    writeFileSync(file, [...lines, 'iptables-restore node-b.rules', ''].join('\n'));
    const packet = 'tcp 192.0.2.10:40000 > 198.51.100.20:61001 in eth0';
    const fromFile = hostTraceJson(runHostTrace({ host: file, packet, seed: 1 }));
    const fromFlags = hostTraceJson(runHostTrace({ hostCommands: lines, ruleset: rulesFile, packet, seed: 1 }));
    expect(fromFlags).toEqual(fromFile);
    expect(fromFlags).toMatchObject({ host: 'node-b', fate: 'forwarded', egress: { iface: 'veth0', dst: '203.0.113.130', dport: 8080 } });
  });

  it('should run from the bin and name the offending --host-cmd with its column on a bad line', () => {
    const r = netsim(['trace', '--host-cmd', 'ip link add eth0 type physical', '--host-cmd', 'ip addr add 198.51.100.300/24 dev eth0', '--packet', 'tcp 192.0.2.1:1 > 198.51.100.20:2 in eth0']);
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(/^netsim trace: --host-cmd:2:\d+: Error: any valid prefix is expected rather than "198.51.100.300\/24"\./);
  });

  it('should refuse a host given both as a file and as flags', () => {
    const r = netsim(['trace', '--host', hostFile, '--host-cmd', 'hostname x', '--packet', 'tcp 192.0.2.1:1 > 198.51.100.20:2 in eth0']);
    expect(r.status).toBe(2);
    expect(r.stderr).toBe('netsim trace: give the host as --host FILE or as --host-cmd lines, not both\n');
  });
});
