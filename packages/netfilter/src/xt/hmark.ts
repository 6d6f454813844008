/**
 * @internal `-j HMARK` (libxt_HMARK, IPv4): `--hmark-tuple` sets the masks of the fields it names
 * (as if each mask option had been given: a later one fails as given twice), prefixes above 32
 * print as 32, masks and values in hex of their width, and the real tool's final checks in its
 * order (`--hmark-mod is mandatory`, `--hmark-rnd is mandatory`, no SPI mask with port masks, at
 * least one field; the kernel's refusal of an SPI value with port values). Printed and listed in libxt_HMARK's order; not evaluated.
 */
import { paramProblem } from '../failure.ts';
import { argOf, uintBase0, type XtDefinition, type XtState } from './define.ts';

/** Every option but the tuple, in the order `iptables-save` prints them. */
const ORDER = [
  'hmark-src-prefix', 'hmark-dst-prefix', 'hmark-sport-mask', 'hmark-dport-mask', 'hmark-spi-mask', 'hmark-sport', 'hmark-dport',
  'hmark-spi', 'hmark-proto-mask', 'hmark-rnd', 'hmark-mod', 'hmark-offset', 'hmark-tuple',
] as const;

/** What each tuple field sets: the option it stands for and its canonical value. */
const TUPLE: Readonly<Record<string, readonly [string, string]>> = {
  src: ['hmark-src-prefix', '32'],
  dst: ['hmark-dst-prefix', '32'],
  sport: ['hmark-sport-mask', '0xffff'],
  dport: ['hmark-dport-mask', '0xffff'],
  spi: ['hmark-spi-mask', '0xffffffff'],
  proto: ['hmark-proto-mask', '0xffff'],
};

function once(s: XtState, name: string, at: number): void {
  if (s.has(name)) throw paramProblem(`HMARK: option "--${name}" can only be used once.\n`, at - 1);
}

function hexWidth(n: number, width: number): string {
  return `0x${n.toString(16).padStart(width, '0')}`;
}

/** An unsigned option in [min, max], printed by `show`. */
function uint(name: string, min: number, max: number, show: (n: number) => string) {
  return (v: readonly string[], at: number, s: XtState): readonly string[] => {
    once(s, name, at);
    const n = uintBase0(v[0] ?? '');
    if (n === undefined || n < min || n > max) throw paramProblem(`HMARK: bad value for option "--${name}", or out of range (${min}-${max}).\n`, at);
    return [show(n)];
  };
}

const prefix = (name: string) => uint(name, 0, 255, (n) => String(Math.min(n, 32)));

export const HMARK: XtDefinition = {
  name: 'HMARK',
  options: [
    {
      name: 'hmark-tuple',
      args: 1,
      parse: (v, at, s) => {
        let ct = false;
        for (const part of (v[0] ?? '').split(',')) {
          const field = part.toLowerCase();
          if (field === 'ct') {
            ct = true;
            continue;
          }
          const set = TUPLE[field];
          if (set === undefined) throw paramProblem(`Bad type "${part}"`, at);
          s.set(set[0], [set[1]]);
        }
        // Printed as a tuple only for ct: the other fields print as their masks.
        return ct ? ['ct'] : [];
      },
    },
    { name: 'hmark-src-prefix', args: 1, parse: prefix('hmark-src-prefix') },
    { name: 'hmark-dst-prefix', args: 1, parse: prefix('hmark-dst-prefix') },
    { name: 'hmark-sport-mask', args: 1, parse: uint('hmark-sport-mask', 0, 0xffff, (n) => hexWidth(n, 4)) },
    { name: 'hmark-dport-mask', args: 1, parse: uint('hmark-dport-mask', 0, 0xffff, (n) => hexWidth(n, 4)) },
    { name: 'hmark-spi-mask', args: 1, parse: uint('hmark-spi-mask', 0, 0xffffffff, (n) => hexWidth(n, 8)) },
    { name: 'hmark-sport', args: 1, parse: uint('hmark-sport', 0, 0xffff, (n) => hexWidth(n, 4)) },
    { name: 'hmark-dport', args: 1, parse: uint('hmark-dport', 0, 0xffff, (n) => hexWidth(n, 4)) },
    { name: 'hmark-spi', args: 1, parse: uint('hmark-spi', 0, 0xffffffff, (n) => hexWidth(n, 8)) },
    { name: 'hmark-proto-mask', args: 1, parse: uint('hmark-proto-mask', 0, 0xffff, (n) => hexWidth(n, 2)) },
    { name: 'hmark-rnd', args: 1, parse: uint('hmark-rnd', 0, 0xffffffff, (n) => hexWidth(n, 8)) },
    { name: 'hmark-mod', args: 1, parse: uint('hmark-mod', 1, 0xffffffff, String) },
    { name: 'hmark-offset', args: 1, parse: uint('hmark-offset', 0, 0xffffffff, String) },
  ],
  order: ORDER,
  finish(s, env) {
    if (s.get('hmark-tuple')?.values.length === 0) s.delete('hmark-tuple');
    if (!s.has('hmark-mod')) throw paramProblem('--hmark-mod is mandatory');
    if (!s.has('hmark-rnd')) throw paramProblem('--hmark-rnd is mandatory');
    if (s.has('hmark-spi-mask') && (s.has('hmark-sport-mask') || s.has('hmark-dport-mask'))) {
      throw paramProblem('you cannot use --hmark-spi-mask and --hmark-?port-mask,at the same time');
    }
    if (!ORDER.some((name) => name !== 'hmark-rnd' && name !== 'hmark-mod' && name !== 'hmark-offset' && s.has(name))) {
      throw paramProblem('you have to specify --hmark-tuple at least');
    }
    // hmark_tg_check: an SPI value cannot be combined with port values.
    if (s.has('hmark-spi') && (s.has('hmark-sport') || s.has('hmark-dport'))) env.rejectRule('Invalid argument');
  },
  list(args) {
    const v = (name: string): string | undefined => argOf(args, name)?.value;
    const hex = (name: string): string => `0x${Number(v(name)).toString(16)}`;
    let out = `HMARK mod ${v('hmark-mod') ?? ''} `;
    if (v('hmark-offset') !== undefined) out += `+ ${hex('hmark-offset')} `;
    if (v('hmark-tuple') !== undefined) out += 'ct, ';
    if (v('hmark-src-prefix') !== undefined) out += `src-prefix ${v('hmark-src-prefix') ?? ''} `;
    if (v('hmark-dst-prefix') !== undefined) out += `dst-prefix ${v('hmark-dst-prefix') ?? ''} `;
    for (const name of ['hmark-sport-mask', 'hmark-dport-mask', 'hmark-spi-mask', 'hmark-sport', 'hmark-dport', 'hmark-spi', 'hmark-proto-mask', 'hmark-rnd']) {
      if (v(name) !== undefined) out += `${name.slice(6)} ${hex(name)} `;
    }
    return out;
  },
};
