/**
 * @internal
 * `-m recent`, the whole extension in one place: its options as libxt_recent reads them, the
 * words `iptables-save` and `iptables -L` print, the kernel checks at load, and evaluation as
 * xt_recent does it against per-host address lists on the simulated clock, readable as
 * `/proc/net/xt_recent/NAME` prints them. Checked against iptables 1.8.9 (nf_tables) and Linux
 * 6.18 in network namespaces.
 */
import { excludesIn, OptionTable, OptionTracker, type ExtensionInstance, type OptionUse, type ParseEnv } from '../extension.ts';
import { paramProblem } from '../failure.ts';
import type { MatchModule } from '../matches.ts';
import { MATCH, NOMATCH, type ModTest } from '../matchers.ts';
import { getaddrinfoV4, xtablesStrtoui } from '../hostAddress.ts';
import { formatIpv4 } from '../ip.ts';
import type { Ipv4, Match, RecentMatch, Ruleset } from '../types.ts';

// ---------------------------------------------------------------------------------------------
// Options

/** libxt_recent's options in its table order, which is also the order of its final checks. */
export const RECENT_OPTIONS = new OptionTable([
  { name: 'set', args: 0, invert: true },
  { name: 'rcheck', args: 0, invert: true },
  { name: 'update', args: 0, invert: true },
  { name: 'remove', args: 0, invert: true },
  { name: 'seconds', args: 1 },
  { name: 'reap', args: 0 },
  { name: 'hitcount', args: 1 },
  { name: 'rttl', args: 0 },
  { name: 'name', args: 1 },
  { name: 'rsource', args: 0 },
  { name: 'rdest', args: 0 },
  { name: 'mask', args: 1 },
]);

const MODES = ['set', 'rcheck', 'update', 'remove'] as const;

/** Per option, the options it excludes and the ones it needs (xt_option_entry excl/also). */
const EXCL: Readonly<Record<string, readonly string[]>> = {
  set: MODES,
  rcheck: MODES,
  update: MODES,
  remove: MODES,
  rttl: ['set', 'remove'],
};
const ALSO: Readonly<Record<string, readonly string[]>> = { reap: ['seconds'] };

/** XT_RECENT_NAME_LEN - 1: the tool copies at most this many bytes of `--name`. */
const NAME_MAX = 199;
const ALL_ONES = 0xffffffff as Ipv4;

class RecentInstance extends OptionTracker implements ExtensionInstance<Match> {
  readonly name = 'recent';
  readonly spec = RECENT_OPTIONS;
  private mode: RecentMatch['mode'] | undefined = undefined;
  private negate = false;
  private seconds: number | undefined = undefined;
  private hitcount = 0;
  private recentName = 'DEFAULT';
  private mask: Ipv4 = ALL_ONES;
  private side: RecentMatch['side'] = 'source';

  constructor() {
    super('recent', RECENT_OPTIONS);
  }

  option(use: OptionUse): void {
    this.use(use, RECENT_OPTIONS.exact(use.name)!);
    const v = use.values[0] ?? '';
    switch (use.name) {
      case 'set':
      case 'rcheck':
      case 'update':
      case 'remove':
        this.mode = use.name;
        if (use.invert) this.negate = true;
        return;
      case 'seconds': {
        const n = xtablesStrtoui(v, 0xffffffff);
        if (n === undefined || n < 1) throw paramProblem('recent: bad value for option "--seconds", or out of range (1-4294967295).\n', use.argIndex + 1);
        this.seconds = n;
        return;
      }
      case 'hitcount': {
        const n = xtablesStrtoui(v, 0xffffffff);
        if (n === undefined) throw paramProblem('recent: bad value for option "--hitcount", or out of range (0-4294967295).\n', use.argIndex + 1);
        this.hitcount = n;
        return;
      }
      case 'name':
        this.recentName = truncateBytes(v, NAME_MAX);
        return;
      case 'rsource':
        this.side = 'source';
        return;
      case 'rdest':
        this.side = 'dest';
        return;
      case 'mask': {
        const m = getaddrinfoV4(v);
        if (m === undefined) throw paramProblem('getaddrinfo: Name or service not known\n', use.argIndex + 1);
        this.mask = m;
        return;
      }
      case 'reap':
      case 'rttl':
        return;
    }
  }

  finish(env: ParseEnv): Match {
    // xtables_options_fcheck: per option given, in table order, what it needs and excludes.
    for (const spec of RECENT_OPTIONS.specs) {
      if (!this.has(spec.name)) continue;
      for (const other of RECENT_OPTIONS.specs) {
        if (other === spec) continue;
        if ((ALSO[spec.name] ?? []).includes(other.name) && !this.has(other.name)) {
          throw paramProblem(`recent: option "--${spec.name}" also requires "--${other.name}".\n`);
        }
        if ((EXCL[spec.name] ?? []).includes(other.name) && this.has(other.name)) excludesIn('recent', spec.name, other.name);
      }
    }
    const mode = this.mode;
    if (mode === undefined) throw paramProblem("recent: you must specify one of `--set', `--rcheck' `--update' or `--remove'");
    const reap = this.has('reap');
    const rttl = this.has('rttl');
    const name = this.recentName;
    // recent_mt_check: --set and --remove take no condition; the name must make a /proc file.
    if ((mode === 'set' || mode === 'remove') && (this.seconds !== undefined || this.hitcount !== 0 || reap || rttl)) env.rejectRule('Invalid argument');
    if (name === '' || name === '.' || name === '..' || name.includes('/')) env.rejectRule('Invalid argument');
    const m: { -readonly [K in keyof RecentMatch]: RecentMatch[K] } = {
      kind: 'recent',
      mode,
      negate: this.negate,
      reap,
      hitcount: this.hitcount,
      rttl,
      name,
      mask: this.mask,
      side: this.side,
    };
    if (this.seconds !== undefined) m.seconds = this.seconds;
    return m;
  }
}

function truncateBytes(s: string, max: number): string {
  if (s.length <= max / 3 || Buffer.byteLength(s, 'utf8') <= max) return s;
  return Buffer.from(s, 'utf8').subarray(0, max).toString('utf8').replace(/\uFFFD+$/, '');
}


// ---------------------------------------------------------------------------------------------
// Text

const MODE_LIST: { readonly [M in RecentMatch['mode']]: string } = { set: 'SET', rcheck: 'CHECK', update: 'UPDATE', remove: 'REMOVE' };

/**
 * The `iptables-save` words, in libxt_recent's order. The name is printed as it is, unquoted
 * (a name with a blank does not read back, as with the real tool), and numbers as signed ints.
 */
function saveRecentWords(m: RecentMatch, out: string[]): void {
  out.push('-m', 'recent');
  if (m.negate) out.push('!');
  out.push(`--${m.mode}`);
  // libxt_recent prints both with %d: above 2^31-1 they come out negative (and do not read back).
  if (m.seconds !== undefined) out.push('--seconds', String(m.seconds | 0));
  if (m.reap) out.push('--reap');
  if (m.hitcount !== 0) out.push('--hitcount', String(m.hitcount | 0));
  if (m.rttl) out.push('--rttl');
  out.push('--name', m.name, '--mask', formatIpv4(m.mask), m.side === 'source' ? '--rsource' : '--rdest');
}

/** The `iptables -L` text. */
function listRecentText(m: RecentMatch): string {
  let s = `${m.negate ? '! ' : ''}recent: ${MODE_LIST[m.mode]}`;
  if (m.seconds !== undefined) s += ` seconds: ${m.seconds | 0}`;
  if (m.reap) s += ' reap';
  if (m.hitcount !== 0) s += ` hit_count: ${m.hitcount | 0}`;
  if (m.rttl) s += ' TTL-Match';
  return `${s} name: ${m.name} side: ${m.side} mask: ${formatIpv4(m.mask)}`;
}

// ---------------------------------------------------------------------------------------------
// State and evaluation

/** One address in a list: its timestamps (jiffies) in a ring of `mask + 1` slots. */
interface RecentEntry {
  readonly addr: number;
  ttl: number;
  readonly stamps: number[];
  /** Next slot to write (`index`), and how many slots hold a timestamp (`nstamps`). */
  index: number;
  nstamps: number;
}

interface RecentList {
  /** nstamps_max_mask: the ring size minus one. */
  stampMask: number;
  /** Entries by masked address; the Map's order is the kernel's LRU list (oldest first). */
  readonly entries: Map<number, RecentEntry>;
}

/**
 * A host's recent lists by name (the kernel's per-netns `recent_table`s). Make one with
 * {@link createRecentLists}; `createEvalState` includes one.
 */
export interface RecentLists {
  readonly byName: Map<string, RecentList>;
}

export function createRecentLists(): RecentLists {
  return { byName: new Map() };
}

/** xt_recent's module parameters as Linux 6.18 ships them: 100 addresses per list, ip_pkt_list_tot 0. */
const IP_LIST_TOT = 100;
/** CONFIG_HZ of the recorded kernel (Debian's 250). */
export const RECENT_HZ = 250;
/** jiffies at boot: the kernel starts 300 s before the 32-bit wrap. */
const INITIAL_JIFFIES = 2 ** 32 - 300 * RECENT_HZ;

/** jiffies at simulated time `nowMs` (time 0 is boot). */
export function jiffiesAt(nowMs: number): number {
  return INITIAL_JIFFIES + Math.floor((nowMs * RECENT_HZ) / 1000);
}

function roundupPow2(n: number): number {
  let p = 1;
  while (p < n) p *= 2;
  return p;
}

/** The ring size a rule asks its list for (recent_mt_check with ip_pkt_list_tot 0). */
function stampMaskFor(hitcount: number): number {
  return hitcount !== 0 ? roundupPow2(hitcount) - 1 : 255;
}

function listFor(lists: RecentLists, name: string, stampMask: number): RecentList {
  let t = lists.byName.get(name);
  if (t === undefined) {
    t = { stampMask, entries: new Map() };
    lists.byName.set(name, t);
  } else if (stampMask > t.stampMask) {
    // A rule needing a larger ring flushes the list, as the kernel does when such a rule loads.
    t.entries.clear();
    t.stampMask = stampMask;
  }
  return t;
}

function entryUpdate(t: RecentList, e: RecentEntry, now: number): void {
  e.index &= t.stampMask;
  e.stamps[e.index++] = now;
  if (e.index > e.nstamps) e.nstamps = e.index;
  t.entries.delete(e.addr);
  t.entries.set(e.addr, e);
}

function entryInit(t: RecentList, addr: number, ttl: number, now: number): void {
  if (t.entries.size >= IP_LIST_TOT) {
    const oldest = t.entries.keys().next();
    if (oldest.done !== true) t.entries.delete(oldest.value);
  }
  t.entries.set(addr, { addr, ttl, stamps: [now], index: 1, nstamps: 1 });
}

/** What recent_mt needs of the packet: the address on its side, its TTL, and the clock. */
export interface RecentInput {
  readonly addr: number;
  readonly ttl: number;
  readonly nowMs: number;
}

/**
 * recent_mt: whether the match matches, updating the list as the kernel does. `lists` is the
 * host's; the list is made on first use.
 */
export function recentMatches(lists: RecentLists, m: RecentMatch, input: RecentInput): boolean {
  const now = jiffiesAt(input.nowMs);
  const t = listFor(lists, m.name, stampMaskFor(m.hitcount));
  const addr = (input.addr & m.mask) >>> 0;
  const ttl = input.ttl;
  let ret = m.negate;
  let e = t.entries.get(addr);
  if (e !== undefined && m.rttl && !(e.ttl === ttl || e.ttl === 0)) e = undefined;
  if (e === undefined) {
    if (m.mode !== 'set') return ret;
    entryInit(t, addr, ttl, now);
    return !ret;
  }
  if (m.mode === 'set') ret = !ret;
  else if (m.mode === 'remove') {
    t.entries.delete(e.addr);
    return !ret;
  } else {
    const time = now - (m.seconds ?? 0) * RECENT_HZ;
    let hits = 0;
    for (let i = 0; i < e.nstamps; i++) {
      if (m.seconds !== undefined && time > (e.stamps[i] as number)) continue;
      if (m.hitcount === 0 || ++hits >= m.hitcount) {
        ret = !ret;
        break;
      }
    }
    if (m.reap) reap(t, time, e, m.mode === 'update' && ret);
  }
  if (m.mode === 'set' || (m.mode === 'update' && ret)) {
    entryUpdate(t, e, now);
    e.ttl = ttl;
  }
  return ret;
}

/** recent_entry_reap: the list's oldest entry goes when its newest timestamp is before `time`. */
function reap(t: RecentList, time: number, working: RecentEntry, update: boolean): void {
  const first = t.entries.values().next();
  if (first.done === true) return;
  const e = first.value;
  if (e === working && update) return;
  if (time > (e.stamps[(e.index - 1) & t.stampMask] as number)) t.entries.delete(e.addr);
}

/** The `-m recent` module for the registry. */
export const RECENT_MODULE: MatchModule = {
  name: 'recent',
  kind: 'recent',
  options: RECENT_OPTIONS,
  create: (): ExtensionInstance<Match> => new RecentInstance(),
  save: (m, out) => saveRecentWords(m as RecentMatch, out),
  list: (m) => listRecentText(m as RecentMatch),
  compile: (match): ModTest => {
    const m = match as RecentMatch;
    const dest = m.side === 'dest';
    return {
      test: (w) => {
        const p = w.packet;
        // xt_recent compares the TTL as it was before forwarding decremented it.
        const ttl = (p.ttl ?? 64) + (p.inIface !== null && p.outIface !== null ? 1 : 0);
        const input = { addr: dest ? p.dst : p.src, ttl, nowMs: w.ctx.nowMs ?? 0 };
        return recentMatches(w.ctx.state.recent, m, input) ? MATCH : NOMATCH;
      },
      sideEffect: true,
      undecidable: false,
    };
  },
};

/**
 * The text of `/proc/net/xt_recent/NAME` (`recent_seq_show`): one line per address, oldest
 * first, timestamps in jiffies. `undefined` when the host has no list of that name.
 */
export function formatRecentProc(lists: RecentLists, name: string): string | undefined {
  const t = lists.byName.get(name);
  if (t === undefined) return undefined;
  let out = '';
  for (const e of t.entries.values()) {
    const last = e.stamps[(e.index - 1) & t.stampMask] as number;
    out += `src=${formatIpv4(e.addr)} ttl: ${e.ttl} last_seen: ${last} oldest_pkt: ${e.index}`;
    for (let i = 0; i < e.nstamps; i++) out += `${i > 0 ? ',' : ''} ${e.stamps[i] as number}`;
    out += '\n';
  }
  return out;
}

/**
 * A write to `/proc/net/xt_recent/NAME` (`recent_mt_proc_write`): `+ADDR` adds or refreshes an
 * address, `-ADDR` removes it, `/` empties the list. Returns the errno text on bad input.
 */
export function writeRecentProc(lists: RecentLists, name: string, text: string, nowMs: number): 'ok' | 'Invalid argument' | 'No such file or directory' {
  const t = lists.byName.get(name);
  if (t === undefined) return 'No such file or directory';
  const line = text.replace(/\n$/, '');
  if (line === '/') {
    t.entries.clear();
    return 'ok';
  }
  const op = line[0];
  if (op !== '+' && op !== '-') return 'Invalid argument';
  const addr = getaddrinfoV4(line.slice(1));
  if (addr === undefined) return 'Invalid argument';
  const e = t.entries.get(addr);
  const now = jiffiesAt(nowMs);
  if (op === '+') {
    if (e === undefined) entryInit(t, addr, 0, now);
    else entryUpdate(t, e, now);
  } else if (e !== undefined) t.entries.delete(addr);
  else return 'No such file or directory';
  return 'ok';
}

/**
 * The recent lists a ruleset's rules name, in first-use order: the kernel makes each list (and
 * its `/proc/net/xt_recent/NAME` file) when the first rule naming it loads.
 */
export function recentListNames(ruleset: Ruleset): string[] {
  const names = new Set<string>();
  for (const t of Object.values(ruleset.tables)) {
    for (const c of Object.values(t.chains)) {
      for (const r of c.rules) for (const m of r.matches) if (m.kind === 'recent') names.add(m.name);
    }
  }
  return [...names];
}
