/**
 * @internal `-m sctp` (libxt_sctp): printed --sport, --dport, then --chunk-types; the kernel
 * takes it only on `-p sctp` rules.
 */
import { paramProblem } from '../failure.ts';
import { parsePortRange } from '../ports.ts';
import { MATCH, NOMATCH, type ModTest } from '../matchers.ts';
import { argOf, kernelProto, type XtDefinition } from './define.ts';

/** SCTP chunk types by name, as `iptables -L` prints them (numbers). */
const CHUNKS: ReadonlyMap<string, number> = new Map([
  ['DATA', 0], ['INIT', 1], ['INIT_ACK', 2], ['SACK', 3], ['HEARTBEAT', 4], ['HEARTBEAT_ACK', 5],
  ['ABORT', 6], ['SHUTDOWN', 7], ['SHUTDOWN_ACK', 8], ['ERROR', 9], ['COOKIE_ECHO', 10],
  ['COOKIE_ACK', 11], ['ECN_ECNE', 12], ['ECN_CWR', 13], ['SHUTDOWN_COMPLETE', 14], ['I_DATA', 64],
  ['RE_CONFIG', 130], ['PAD', 132], ['ASCONF', 193], ['ASCONF_ACK', 128], ['FORWARD_TSN', 192], ['I_FORWARD_TSN', 194],
]);

/**
 * The chunk list as `iptables-save` prints it: names upper-cased, each once, in chunk-number
 * order (the bitmap's), flags kept; unknown names were refused by the real tool and stay last.
 */
function chunkOrder(text: string): string {
  const seen = new Map<string, { word: string; n: number; i: number }>();
  text.split(',').forEach((t, i) => {
    const colon = t.indexOf(':');
    const name = (colon < 0 ? t : t.slice(0, colon)).toUpperCase();
    if (seen.has(name)) return;
    seen.set(name, { word: colon < 0 ? name : `${name}${t.slice(colon)}`, n: CHUNKS.get(name) ?? 256, i });
  });
  return [...seen.values()]
    .sort((a, b) => a.n - b.n || a.i - b.i)
    .map((x) => x.word)
    .join(',');
}

const port = (v: readonly string[], at: number): readonly string[] => {
  const r = parsePortRange(v[0] ?? '', 132, at);
  return [r.from === r.to ? String(r.from) : `${r.from}:${r.to}`];
};

export const SCTP: XtDefinition = {
  name: 'sctp',
  options: [
    { name: 'source-port', aliases: ['sport'], args: 1, invert: true, as: 'sport', parse: port },
    { name: 'destination-port', aliases: ['dport'], args: 1, invert: true, as: 'dport', parse: port },
    {
      name: 'chunk-types',
      args: 2,
      invert: true,
      pairMessage: '--chunk-types requires two args',
      parse: (v, at) => {
        // strcasecmp: any case, printed in lower case.
        const how = (v[0] ?? '').toLowerCase();
        if (how !== 'all' && how !== 'any' && how !== 'only') throw paramProblem('Match type has to be one of "ALL", "ANY" or "ONLY"', at);
        return [how, chunkOrder(v[1] ?? '')];
      },
    },
  ],
  order: ['sport', 'dport', 'chunk-types'],
  // xt_sctp is registered for sctp only.
  finish: (_s, env) => kernelProto(env, 132),
  compile: (args) => portTest(132, args),
  list(args) {
    const parts = ['sctp'];
    for (const [opt, short] of [
      ['sport', 'sp'],
      ['dport', 'dp'],
    ] as const) {
      const v = argOf(args, opt);
      if (v === undefined) continue;
      parts.push(`${short}${v.value.includes(':') ? 'ts' : 't'}:${v.invert ? '!' : ''}${v.value}`);
    }
    const k = args.indexOf('--chunk-types');
    if (k >= 0) {
      const types = (args[k + 2] ?? '').split(',').map((t) => {
        const colon = t.indexOf(':');
        const name = colon < 0 ? t : t.slice(0, colon);
        const n = CHUNKS.get(name.toUpperCase());
        const num = n === undefined ? name : `0x${n.toString(16).toUpperCase().padStart(4, '0')}`;
        return colon < 0 ? num : `${num}${t.slice(colon)}`;
      });
      parts.push(`${args[k - 1] === '!' ? '! ' : ''}${args[k + 1] ?? ''}`, types.join(','));
    }
    return parts.join(' ');
  },
};

/**
 * `--sport`/`--dport` alone (each maybe negated), as xt_sctp and xt_dccp compare them on a first
 * fragment of their protocol, exactly as tcp/udp do; other options (`--chunk-types`,
 * `--dccp-types`…) leave the packet undecided (undefined).
 */
export function portTest(proto: number, args: readonly string[]): ModTest | undefined {
  let sFrom = 0;
  let sTo = 65535;
  let sNeg = false;
  let dFrom = 0;
  let dTo = 65535;
  let dNeg = false;
  for (let i = 0; i < args.length; i++) {
    let neg = false;
    if (args[i] === '!') {
      neg = true;
      i++;
    }
    const opt = args[i];
    const value = args[i + 1];
    if (value === undefined) return undefined;
    const m = /^(\d+)(?::(\d+))?$/.exec(value);
    if (m === null) return undefined;
    const from = Number(m[1]);
    const to = m[2] === undefined ? from : Number(m[2]);
    if (opt === '--sport') [sFrom, sTo, sNeg] = [from, to, neg];
    else if (opt === '--dport') [dFrom, dTo, dNeg] = [from, to, neg];
    else return undefined;
    i++;
  }
  return {
    test: (w) => {
      const p = w.packet;
      if (p.proto !== proto || p.fragment) return NOMATCH;
      if ((p.sport >= sFrom && p.sport <= sTo) === sNeg) return NOMATCH;
      if ((p.dport >= dFrom && p.dport <= dTo) === dNeg) return NOMATCH;
      return MATCH;
    },
    sideEffect: false,
    undecidable: false,
  };
}
