/**
 * @internal
 * `-m multiport` (libxt_multiport, revision 1), whole: one of `--source-ports`, `--destination-ports`
 * or `--ports` with up to 15 ports (a range counts two), the protocol checks and messages of the
 * real tool, the printed words and evaluation (a first fragment of a protocol with ports).
 */
import { OptionTable, excludes, type ExtensionInstance } from '../extension.ts';
import { paramProblem } from '../failure.ts';
import type { MatchModule } from '../matches.ts';
import { MATCH, NOMATCH, type ModTest } from '../matchers.ts';
import { formatPortRange, listPort, parsePort } from '../ports.ts';
import type { Match, PortRange } from '../types.ts';

type MultiportMatch = Extract<Match, { kind: 'multiport' }>;

const MULTIPORT_OPTIONS = new OptionTable([
  { name: 'source-ports', aliases: ['sports'], args: 1, invert: true },
  { name: 'destination-ports', aliases: ['dports'], args: 1, invert: true },
  { name: 'ports', args: 1, invert: true },
]);
const MULTIPORT_PROTOS: ReadonlySet<number> = new Set([6, 17, 132, 33, 136]);

/** Protocols whose header starts with 16-bit source and destination ports. */
function hasPorts(proto: number): boolean {
  return proto === 6 || proto === 17 || proto === 132 || proto === 136 || proto === 33;
}

export const MULTIPORT_MODULE: MatchModule = {
  name: 'multiport',
  kind: 'multiport',
  options: MULTIPORT_OPTIONS,
  create(): ExtensionInstance<Match> {
    let result: MultiportMatch | undefined;
    let firstOpt = '';
    return {
      name: 'multiport',
      spec: MULTIPORT_OPTIONS,
      option(use, env) {
        if (result !== undefined) {
          if (firstOpt === use.name) throw paramProblem(`multiport: option "--${use.name}" can only be used once.\n`, use.argIndex);
          excludes('multiport', MULTIPORT_OPTIONS, use.name, firstOpt, use.argIndex);
        }
        if (env.proto === undefined || !MULTIPORT_PROTOS.has(env.proto)) {
          throw paramProblem("multiport needs `-p tcp', `-p udp', `-p udplite', `-p sctp' or `-p dccp'", use.argIndex);
        }
        if (env.protoInvert) throw paramProblem('multiport only works with TCP, UDP, UDPLITE, SCTP and DCCP', use.argIndex);
        const ports: PortRange[] = [];
        let slots = 0;
        for (const part of (use.values[0] ?? '').split(',')) {
          const colon = part.indexOf(':');
          if (colon < 0) {
            const p = parsePort(part, env.proto, use.argIndex + 1);
            ports.push({ from: p, to: p });
            slots += 1;
          } else {
            const from = parsePort(part.slice(0, colon), env.proto, use.argIndex + 1);
            const to = parsePort(part.slice(colon + 1), env.proto, use.argIndex + 1);
            if (from >= to) throw paramProblem('invalid portrange specified', use.argIndex + 1);
            ports.push({ from, to });
            slots += 2;
          }
          if (slots > 15) throw paramProblem('too many ports specified', use.argIndex + 1);
        }
        firstOpt = use.name;
        const which = use.name === 'source-ports' ? 'sports' : use.name === 'destination-ports' ? 'dports' : 'ports';
        result = { kind: 'multiport', which, ports, negate: use.invert };
      },
      finish() {
        if (result === undefined) throw paramProblem('multiport expection an option');
        return result;
      },
    };
  },
  save(match, out) {
    const m = match as MultiportMatch;
    out.push('-m', 'multiport');
    if (m.negate) out.push('!');
    out.push(`--${m.which}`, m.ports.map(formatPortRange).join(','));
  },
  list(match, numeric, proto) {
    const m = match as MultiportMatch;
    const text = m.ports
      .map((r) => (r.from === r.to ? listPort(r.from, proto, numeric) : `${listPort(r.from, proto, numeric)}:${listPort(r.to, proto, numeric)}`))
      .join(',');
    return `multiport ${m.which} ${m.negate ? ' !' : ''}${text}`;
  },
  compile(match): ModTest {
    const m = match as MultiportMatch;
    const n = m.ports.length;
    const from = new Int32Array(n);
    const to = new Int32Array(n);
    m.ports.forEach((r, i) => {
      from[i] = r.from;
      to[i] = r.to;
    });
    const src = m.which !== 'dports';
    const dst = m.which !== 'sports';
    const negate = m.negate;
    return {
      test: (w) => {
        const p = w.packet;
        if (!hasPorts(p.proto) || p.fragment) return NOMATCH;
        let hit = false;
        for (let i = 0; i < n; i++) {
          const lo = from[i] as number;
          const hi = to[i] as number;
          if ((src && p.sport >= lo && p.sport <= hi) || (dst && p.dport >= lo && p.dport <= hi)) {
            hit = true;
            break;
          }
        }
        return hit !== negate ? MATCH : NOMATCH;
      },
      sideEffect: false,
      undecidable: false,
    };
  },
};
