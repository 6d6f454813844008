import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { emptyRuleset, parseIpv4 as ip, type Match, type Ruleset } from '@netsim/netfilter';
import { checkCase } from '../src/campaign.ts';
import type { NfCase } from '../src/generate.ts';
import { KNOWN_DISAGREEMENTS, knownCandidates } from '../src/known.ts';
import { Lab } from '../src/lab.ts';
import { requiredButUnavailable } from '../src/environment.ts';
import { runNfCase } from '../src/runner.ts';
import { PROTO_UDP } from '../src/packet.ts';

const env = inject('conformanceEnv');
const legacyEnv = inject('conformanceLegacy');

/** raw PREROUTING: one counting rule with the given udp match. */
function caseWith(udp: Match): NfCase {
  const base = emptyRuleset();
  const rs: Ruleset = {
    tables: {
      ...base.tables,
      raw: { name: 'raw', chains: { ...base.tables.raw.chains, PREROUTING: { name: 'PREROUTING', policy: 'ACCEPT', rules: [{ proto: { proto: 17, negate: false }, matches: [udp] }] } } },
    },
  };
  return {
    profile: 'forward',
    ruleset: rs,
    injection: { kind: 'ingress', peer: 'uplink2', packet: { src: ip('198.19.0.7'), dst: ip('198.18.0.5'), proto: PROTO_UDP, sport: 40001, dport: 443, tcpFlags: 0, icmpType: 0, icmpCode: 0, icmpId: 0 } },
  };
}

/** nat OUTPUT DNATs to the packet's own destination; filter OUTPUT (policy DROP) accepts only `! --ctstate DNAT`. */
function nullDnatCase(): NfCase {
  const base = emptyRuleset();
  const rs: Ruleset = {
    tables: {
      ...base.tables,
      nat: { name: 'nat', chains: { ...base.tables.nat.chains, OUTPUT: { name: 'OUTPUT', policy: 'ACCEPT', rules: [{ matches: [], target: { kind: 'DNAT', to: { minIp: ip('198.18.3.3'), maxIp: ip('198.18.3.3') }, random: false, persistent: false } }] } } },
      filter: {
        name: 'filter',
        chains: {
          ...base.tables.filter.chains,
          OUTPUT: { name: 'OUTPUT', policy: 'DROP', rules: [{ outIface: { name: 'eth1', wildcard: false, negate: false }, matches: [{ kind: 'conntrack', ctstate: { states: ['DNAT'], negate: true } }], target: { kind: 'ACCEPT' } }] },
        },
      },
    },
  };
  return { profile: 'local', ruleset: rs, injection: { kind: 'local', mark: 0, packet: { src: ip('192.0.2.1'), dst: ip('198.18.3.3'), proto: 6, sport: 40000, dport: 8080, tcpFlags: 0x02, icmpType: 0, icmpCode: 0, icmpId: 0 } } };
}

const bothInverted = caseWith({ kind: 'udp', sport: { range: { from: 53, to: 53 }, negate: true }, dport: { range: { from: 443, to: 443 }, negate: true } });
const oneInverted = caseWith({ kind: 'udp', sport: { range: { from: 53, to: 53 }, negate: false }, dport: { range: { from: 443, to: 443 }, negate: true } });

describe('known disagreements', () => {
  it('should give every known disagreement an id, a title and a reason', () => {
    for (const k of KNOWN_DISAGREEMENTS) {
      expect(k.id).toMatch(/^[a-z0-9-]+$/);
      expect(k.reason.length).toBeGreaterThan(100);
    }
    expect(new Set(KNOWN_DISAGREEMENTS.map((k) => k.id)).size).toBe(KNOWN_DISAGREEMENTS.length);
  });

  it('should recognise the inverted port pair only when both single ports are negated', () => {
    const diff = ['counter raw PREROUTING #1: kernel 1, netsim 0'];
    expect(knownCandidates(bothInverted, diff).map((k) => k.id)).toEqual(['nft-inverted-port-pair']);
    expect(knownCandidates(oneInverted, diff)).toEqual([]);
  });

  it('should explain only a difference in the counter of the rule holding the pattern, not one elsewhere in the case', () => {
    expect(knownCandidates(bothInverted, ['counter raw PREROUTING #2: kernel 1, netsim 0'])).toEqual([]);
    expect(knownCandidates(bothInverted, ['egress: kernel [], netsim [eth0 udp 198.19.0.7:40001 > 198.18.0.5:443]'])).toEqual([]);
    expect(knownCandidates(bothInverted, ['egress: kernel [], netsim [x]', 'counter raw PREROUTING #1: kernel 1, netsim 0']).map((k) => k.id)).toEqual(['nft-inverted-port-pair']);
  });


});

describe.skipIf(!env.ok)('fixed disagreement eval-null-dnat-sets-ctstate-dnat (regression)', () => {
  let lab: Lab;
  beforeAll(() => {
    lab = Lab.create();
  });
  afterAll(() => {
    lab.destroy();
  });

  it('should see the kernel treat a DNAT to the same destination as no DNAT for --ctstate', () => {
    const r = runNfCase(lab, nullDnatCase());
    expect(r.kernel.counters['filter OUTPUT #1']).toBe(1);
    expect(r.kernel.egress).toEqual(['eth1 tcp 192.0.2.1:40000 > 198.18.3.3:8080 [SYN]']);
    expect(r.kernel.conntrack).toEqual(['tcp SYN_SENT 192.0.2.1:40000>198.18.3.3:8080 reply 198.18.3.3:8080>192.0.2.1:40000 unreplied mark=0']);
  });

  it('should agree with the kernel since evaluateHook makes a null binding of it (580f3c5)', () => {
    const checked = checkCase(lab, nullDnatCase());
    expect(checked.result.diffs).toEqual([]);
    expect(checked.verdict.kind).toBe('agree');
  });
});

describe.skipIf(!env.ok || !legacyEnv.ok)('known disagreement nft-inverted-port-pair on the kernel', () => {
  let nft: Lab;
  let legacy: Lab;
  beforeAll(() => {
    nft = Lab.create();
    legacy = Lab.create({ backend: 'legacy' });
  });
  afterAll(() => {
    nft.destroy();
    legacy.destroy();
  });

  it('should agree with iptables-legacy: `! --sport 53 ! --dport 443` does not match a packet to port 443', () => {
    const onLegacy = runNfCase(legacy, bothInverted);
    expect(onLegacy.diffs).toEqual([]);
    expect(onLegacy.kernel.counters['raw PREROUTING #1']).toBeUndefined();
  });

  it('should classify what iptables-nft does with that rule as this known disagreement, never as a new one', () => {
    const checked = checkCase(nft, bothInverted, legacy);
    // iptables-nft 1.8.9 counts the packet (one port differs); a fixed iptables-nft agrees with netsim.
    expect(['agree', 'known']).toContain(checked.verdict.kind);
    if (checked.verdict.kind === 'known') {
      expect(checked.verdict.known.id).toBe('nft-inverted-port-pair');
      expect(checked.verdict.confirmed).toBe(true);
      expect(checked.result.diffs).toEqual(['counter raw PREROUTING #1: kernel 1, netsim 0']);
    }
  });
});

describe('the kernel suite in CI', () => {
  it('should be an error, not a skip, when CI=true and the machine cannot run it', () => {
    const missing = { ok: false as const, reason: 'not running as root (uid 1000)' };
    expect(requiredButUnavailable(missing, { CI: 'true' })).toBe('@netsim/conformance: the kernel comparison is required in CI (CI=true) but cannot run: not running as root (uid 1000)');
    expect(requiredButUnavailable(missing, {})).toBeUndefined();
    expect(requiredButUnavailable(missing, { CI: 'true', NETSIM_CONFORMANCE: 'off' })).toBeUndefined();
    expect(requiredButUnavailable({ ok: true }, { CI: 'true' })).toBeUndefined();
  });
});
