/**
 * @internal
 * The address spellings iptables accepts, read as libxtables and glibc read them (checked against
 * iptables 1.8.9 in a network namespace):
 *
 * - `-s`/`-d` hosts first go through xtables' own dotted reader: one to four parts, each a
 *   `strtoul` base-0 number up to 255 (so `0x0a` and octal `012` are 10, `+1` and ` 1` are 1),
 *   missing parts are zero (`10.1/16` is `10.1.0.0/16`, `0/0` is `0.0.0.0/0`). Anything else
 *   goes to `getaddrinfo`, which takes what `inet_aton` takes with nothing after it
 *   (`167772161` and `0x0a000001` are `10.0.0.1`) and the names in a stock `/etc/hosts`
 *   (`localhost`).
 * - Masks after `/`: with a dot, four parts read the same way (`255.255.255.0`,
 *   `0xff.0xff.0xff.0`); without, a base-0 number from 0 to 32 (`0x18` and octal `030` are 24).
 * - Options typed as a host (`recent --mask`) go to `getaddrinfo` alone: `255.255` is
 *   `255.0.0.255` there, as `inet_aton` reads it.
 */
import type { Ipv4 } from './types.ts';

const ULONG_MAX = 2 ** 64 - 1;

/** `strtoul(text + from, &end, 0)` without the sign and blank handling: digits only. */
function strtoulDigits(text: string, from: number): { value: number; end: number } {
  let i = from;
  let base = 10;
  if (text.charCodeAt(i) === 48 /* 0 */) {
    const x = text.charCodeAt(i + 1) | 0x20;
    if (x === 120 /* x */ && hexDigit(text.charCodeAt(i + 2)) >= 0) {
      base = 16;
      i += 2;
    } else base = 8;
  }
  let value = 0;
  const start = i;
  for (; i < text.length; i++) {
    const d = base === 16 ? hexDigit(text.charCodeAt(i)) : text.charCodeAt(i) - 48;
    if (d < 0 || d >= base) break;
    value = Math.min(value * base + d, ULONG_MAX);
  }
  return { value, end: i === start && base !== 8 ? from : i };
}

function hexDigit(c: number): number {
  if (c >= 48 && c <= 57) return c - 48;
  const l = c | 0x20;
  if (l >= 97 && l <= 102) return l - 87;
  return -1;
}

function isSpace(c: number): boolean {
  return c === 32 || (c >= 9 && c <= 13);
}

/**
 * xtables_strtoui with base 0: leading blanks and one `+` allowed, no `-`, the whole text a
 * number within `max`; `undefined` otherwise.
 */
export function xtablesStrtoui(text: string, max: number): number | undefined {
  let i = 0;
  while (i < text.length && isSpace(text.charCodeAt(i))) i++;
  if (text.charCodeAt(i) === 45 /* - */) return undefined;
  if (text.charCodeAt(i) === 43 /* + */) i++;
  const c = text.charCodeAt(i);
  if (!(c >= 48 && c <= 57)) return undefined;
  const { value, end } = strtoulDigits(text, i);
  if (end !== text.length || value > max) return undefined;
  return value;
}

/** xtables' dotted reader (`__numeric_to_ipaddr`); a mask needs all four parts. */
export function xtablesNumericAddress(text: string, isMask: boolean): Ipv4 | undefined {
  // The tool copies the text into a 20-byte buffer first.
  const s = text.length > 19 ? text.slice(0, 19) : text;
  const parts = s.split('.');
  if (parts.length > 4 || (isMask && parts.length !== 4)) {
    // More than four parts: the fourth keeps its dots and fails as a number.
    return undefined;
  }
  let n = 0;
  for (let k = 0; k < 4; k++) {
    const p = parts[k];
    const v = p === undefined ? 0 : xtablesStrtoui(p, 255);
    if (v === undefined) return undefined;
    n = n * 256 + v;
  }
  return n as Ipv4;
}

/** glibc's `inet_aton` with nothing after the address (`__inet_aton_exact`, as getaddrinfo uses). */
export function inetAtonExact(text: string): Ipv4 | undefined {
  const parts: number[] = [];
  let i = 0;
  let val = 0;
  for (;;) {
    const c = text.charCodeAt(i);
    if (!(c >= 48 && c <= 57)) return undefined;
    const r = strtoulDigits(text, i);
    val = r.value;
    i = r.end;
    if (text.charCodeAt(i) === 46 /* . */) {
      if (parts.length > 2 || val > 0xff) return undefined;
      parts.push(val);
      i++;
    } else break;
  }
  if (i !== text.length) return undefined;
  const limits = [0xffffffff, 0xffffff, 0xffff, 0xff];
  if (val > (limits[parts.length] as number)) return undefined;
  let n = 0;
  for (let k = 0; k < parts.length; k++) n += (parts[k] as number) * 2 ** (8 * (3 - k));
  return (n + val) as Ipv4;
}

/** The names a stock `/etc/hosts` gives an IPv4 address. */
const HOSTS: ReadonlyMap<string, Ipv4> = new Map([['localhost', 0x7f000001 as Ipv4]]);

/** `getaddrinfo(text, AF_INET)` on a host without DNS: a numeric address or a hosts entry. */
export function getaddrinfoV4(text: string): Ipv4 | undefined {
  return inetAtonExact(text) ?? HOSTS.get(text);
}

/** `a.b.c.d` in decimal, no part with a leading zero; undefined for anything else. */
function plainQuad(text: string): Ipv4 | undefined {
  let n = 0;
  let part = 0;
  let digits = 0;
  let parts = 0;
  for (let i = 0; i <= text.length; i++) {
    const c = i < text.length ? text.charCodeAt(i) : 46;
    if (c === 46) {
      if (digits === 0 || part > 255 || parts === 4) return undefined;
      n = n * 256 + part;
      parts++;
      part = 0;
      digits = 0;
      continue;
    }
    if (c < 48 || c > 57 || digits === 3 || (digits === 1 && part === 0)) return undefined;
    part = part * 10 + (c - 48);
    digits++;
  }
  return parts === 4 ? (n as Ipv4) : undefined;
}

/** A `-s`/`-d` host as xtables reads it: its dotted reader, then getaddrinfo. */
export function xtablesHost(text: string): Ipv4 | undefined {
  // The usual spelling, four decimal parts without leading zeros, read without allocating.
  const plain = plainQuad(text);
  if (plain !== undefined) return plain;
  return xtablesNumericAddress(text, false) ?? getaddrinfoV4(text);
}

/** A `-s`/`-d` mask: dotted (returned as a uint32 mask) or a prefix length 0..32. */
export function xtablesMask(text: string): { readonly dotted: number } | { readonly prefix: number } | undefined {
  if (text.includes('.')) {
    const m = xtablesNumericAddress(text, true);
    return m === undefined ? undefined : { dotted: m };
  }
  const n = xtablesStrtoui(text, 32);
  return n === undefined ? undefined : { prefix: n };
}
