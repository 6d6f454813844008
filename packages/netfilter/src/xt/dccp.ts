/**
 * @internal `-m dccp` (libxt_dccp): `--sport`/`--dport` ranges as xtables' guided parser reads
 * them (numbers modulo 2^16, no order check, a full range kept in `iptables-save` and left out of
 * `-L`), `--dccp-types` by name in any case (empty items skipped; `INVALID` stands for types 10 to
 * 15, printed once by name and as every number with `-n`), `--dccp-option` 1-255. Printed
 * `--sport --dport --dccp-types --dccp-option`. The kernel takes it only on `-p dccp` rules; the
 * ports are evaluated as tcp's, the types and options leave the packet undecided.
 */
import { paramProblem } from '../failure.ts';
import { listPort, parsePortRangeX6 } from '../ports.ts';
import { argOf, uintIn, type XtDefinition } from './define.ts';
import { portTest } from './sctp.ts';

/** Packet types by bit, as libxt_dccp names them; bits 10 to 15 are all INVALID. */
const TYPES: readonly string[] = ['REQUEST', 'RESPONSE', 'DATA', 'ACK', 'DATAACK', 'CLOSEREQ', 'CLOSE', 'RESET', 'SYNC', 'SYNCACK', 'INVALID'];
const INVALID_BITS = 0xfc00;

const port = (v: readonly string[], at: number): readonly string[] => {
  const r = parsePortRangeX6(v[0] ?? '', 33, at);
  return [r.from === r.to ? String(r.from) : `${r.from}:${r.to}`];
};

function typeMask(text: string, at: number): number {
  let mask = 0;
  for (const part of text.split(',')) {
    if (part === '') continue;
    const k = TYPES.findIndex((t) => t === part.toUpperCase());
    if (k < 0) throw paramProblem(`Unknown DCCP type \`${part}'`, at);
    mask |= k === 10 ? INVALID_BITS : 1 << k;
  }
  return mask;
}

/** The names `iptables-save` prints: bit order, INVALID once for bits 10 to 15. */
function typeNames(mask: number): string {
  const names: string[] = [];
  for (let k = 0; k < 10; k++) if ((mask & (1 << k)) !== 0) names.push(TYPES[k] as string);
  if ((mask & INVALID_BITS) !== 0) names.push('INVALID');
  return names.join(',');
}

function typeNumbers(mask: number): string {
  const nums: number[] = [];
  for (let k = 0; k < 16; k++) if ((mask & (1 << k)) !== 0) nums.push(k);
  return nums.join(',');
}

function listPorts(short: string, value: string, invert: boolean, numeric: boolean): string {
  const colon = value.indexOf(':');
  const from = Number(colon < 0 ? value : value.slice(0, colon));
  const to = colon < 0 ? from : Number(value.slice(colon + 1));
  if (from === 0 && to === 65535 && !invert) return '';
  const inv = invert ? '!' : '';
  if (from === to) return ` ${short}:${inv}${listPort(from, 33, numeric)}`;
  return ` ${short}s:${inv}${listPort(from, 33, numeric)}:${listPort(to, 33, numeric)}`;
}

export const DCCP: XtDefinition = {
  name: 'dccp',
  options: [
    { name: 'source-port', aliases: ['sport'], args: 1, invert: true, as: 'sport', parse: port },
    { name: 'destination-port', aliases: ['dport'], args: 1, invert: true, as: 'dport', parse: port },
    { name: 'dccp-types', args: 1, invert: true, parse: (v, at) => [typeNames(typeMask(v[0] ?? '', at))] },
    { name: 'dccp-option', args: 1, invert: true, parse: uintIn('dccp', 1, 255, 'dccp-option') },
  ],
  order: ['sport', 'dport', 'dccp-types', 'dccp-option'],
  finish(_s, env) {
    // An xt match: the kernel refuses it on a rule whose protocol is not dccp, or negated.
    if (env.proto !== 33 || env.protoInvert) env.rejectRule('Invalid argument');
  },
  list(args, numeric) {
    let s = 'dccp';
    const sp = argOf(args, 'sport');
    if (sp !== undefined) s += listPorts('spt', sp.value, sp.invert, numeric);
    const dp = argOf(args, 'dport');
    if (dp !== undefined) s += listPorts('dpt', dp.value, dp.invert, numeric);
    const types = argOf(args, 'dccp-types');
    if (types !== undefined) {
      const mask = typeMask(types.value, 0);
      s += `${types.invert ? ' !' : ''} ${numeric ? typeNumbers(mask) : typeNames(mask)}`;
    }
    const option = argOf(args, 'dccp-option');
    if (option !== undefined) s += ` option=${option.invert ? '!' : ''}${option.value}`;
    return s;
  },
  compile: (args) => portTest(33, args),
};
