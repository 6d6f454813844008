import { writeFileSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseUnknownOption, runTrace } from '../../src/commands/trace.ts';
import { runHostTrace } from '../../src/commands/traceHost.ts';

const RULES = '*raw\n-A PREROUTING -m rpfilter --invert -j DROP\n-A PREROUTING -p tcp -m socket --transparent -j ACCEPT\nCOMMIT\n';
const dir = mkdtempSync(join(tmpdir(), 'netsim-unknown-'));
const rules = join(dir, 'rp.rules');
writeFileSync(rules, RULES);
const HOST = ['ip link add eth0 type physical', 'ip link set eth0 up', 'ip addr add 198.51.100.10/24 dev eth0', 'listen tcp 22'];
const PACKET = 'tcp 198.51.100.2:4000 > 198.51.100.10:22 in eth0 flags SYN';

function choice(...values: string[]) {
  return values.reduce((prev, v) => parseUnknownOption(v, prev), parseUnknownOption('stop'));
}

describe('--unknown per module', () => {
  it('should read POLICY and MODULE=POLICY, with the short words', () => {
    expect(choice('rpfilter=match', 'socket=nomatch', 'assume-match')).toEqual({ unknown: 'assume-match', modules: { rpfilter: 'assume-match', socket: 'assume-nomatch' } });
    expect(choice('set=stop').modules).toEqual({ set: 'stop' });
    expect(() => choice('rpfilter=maybe')).toThrow('"maybe" is not a policy');
    expect(() => choice('rp filter=match')).toThrow('is not a module name');
  });

  it('should stop at the first undecidable module by default on the host path', () => {
    const r = runHostTrace({ hostCommands: HOST, ruleset: rules, packet: PACKET, seed: 1 });
    expect(r.result.fate).toBe('unknown');
    expect(r.result.reason).toContain('cannot evaluate rpfilter');
  });

  it('should apply each module its own policy on the host path', () => {
    const noRp = runHostTrace({ hostCommands: HOST, ruleset: rules, packet: PACKET, seed: 1, unknownModules: { rpfilter: 'assume-nomatch' } });
    expect(noRp.result.fate).toBe('unknown');
    expect(noRp.result.reason).toContain('cannot evaluate socket');
    const both = runHostTrace({ hostCommands: HOST, ruleset: rules, packet: PACKET, seed: 1, unknownModules: { rpfilter: 'assume-nomatch', socket: 'assume-match' } });
    expect(both.result.fate).toBe('delivered');
    // A module's own policy wins over the default.
    const dropped = runHostTrace({ hostCommands: HOST, ruleset: rules, packet: PACKET, seed: 1, unknown: 'assume-nomatch', unknownModules: { rpfilter: 'assume-match' } });
    expect(dropped.result.fate).toBe('dropped');
  });

  it('should apply per-module policies on the one-dump path too', () => {
    const base = { ruleset: rules, packet: PACKET, localAddress: ['198.51.100.10'], ctstate: 'NEW', ctmark: 0, seed: 1, skipNat: false, all: false, json: false };
    expect(runTrace({ ...base, unknown: 'stop' }).result.verdict.kind).toBe('unknown');
    expect(runTrace({ ...base, unknown: 'stop', unknownModules: { rpfilter: 'assume-match' } }).result.verdict.kind).toBe('DROP');
    expect(runTrace({ ...base, unknown: 'stop', unknownModules: { rpfilter: 'assume-nomatch', socket: 'assume-match' } }).result.verdict.kind).toBe('ACCEPT');
  });
});
