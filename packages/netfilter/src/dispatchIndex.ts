/**
 * Index dispatch for long runs of rules that pin the same header fields to constants, the shape of
 * kube-proxy's `KUBE-SERVICES` (`-d VIP/32 -p tcp -m tcp --dport N -j KUBE-SVC-…`) and
 * `KUBE-NODEPORTS` (`-p tcp -m tcp --dport N -j KUBE-EXT-…`).
 *
 * A rule's *key shape* says which of these it pins: `-d a.b.c.d/32` (not negated), `-p P` (not
 * negated, not `all`), and `--dport N` of the rule's `-m tcp`/`-m udp` (one port, not negated,
 * with no `statistic` module before it). A maximal run of consecutive rules with the same shape
 * becomes a hash table from key to the run positions carrying it. For a packet, every rule of the
 * run whose key differs from the packet's is certainly `nomatch`: its `-d`/`-p` header check or
 * its `--dport` check fails, and nothing with a side effect (a statistic draw, an nth count) runs
 * before those checks in the kernel's order either. So the walk evaluates only the positions the
 * table returns, in order, and records the others as one `skip` trace entry per gap.
 *
 * @internal
 */
import type { Packet } from './evalTypes.ts';
import type { Rule } from './types.ts';
import { moduleOf } from './matches.ts';

const SHAPE_DST = 1;
const SHAPE_PROTO = 2;
const SHAPE_DPORT = 4;
/** 2^21: keys are `dst * 2^21 + low`, below 2^53. */
const DST_SCALE = 0x200000;

export interface RuleKey {
  readonly shape: number;
  readonly key: number;
}

/** One indexed run of a chain: positions `start`..`end-1` (0-based). */
export interface DispatchRun {
  readonly start: number;
  readonly end: number;
  readonly shape: number;
  /** Key → ascending run positions with that key. */
  readonly table: ReadonlyMap<number, readonly number[]>;
}

function portProtoCode(proto: number): number {
  return proto === 6 ? 1 : proto === 17 ? 2 : 0;
}

/** The key shape and key of a rule, or null when it pins nothing useful. */
export function ruleKey(rule: Rule): RuleKey | null {
  let shape = 0;
  let dst = 0;
  let low = 0;
  if (rule.dst !== undefined && !rule.dst.negate && rule.dst.cidr.prefix === 32) {
    shape |= SHAPE_DST;
    dst = rule.dst.cidr.addr;
  }
  const proto = rule.proto !== undefined && !rule.proto.negate && rule.proto.proto !== 0 ? rule.proto.proto : 0;
  if (proto !== 0) {
    shape |= SHAPE_PROTO;
    low = proto;
  }
  for (const m of rule.matches) {
    const mod = moduleOf(m);
    if (mod?.barrier === true) break;
    const hint = mod?.inline?.(m);
    if (hint === undefined) continue;
    if (hint.proto !== proto) break;
    if (!hint.dpNeg && hint.dpFrom === hint.dpTo) {
      shape |= SHAPE_DPORT;
      low = (portProtoCode(proto) << 16) | hint.dpFrom;
      break;
    }
  }
  if ((shape & (SHAPE_DST | SHAPE_DPORT)) === 0) return null;
  return { shape, key: dst * DST_SCALE + low };
}

/** The key a packet has under `shape`, or -1 when no rule of that shape can match it. */
export function packetKey(shape: number, p: Packet): number {
  let low = 0;
  if ((shape & SHAPE_DPORT) !== 0) {
    const code = portProtoCode(p.proto);
    if (code === 0) return -1;
    low = (code << 16) | p.dport;
  } else if ((shape & SHAPE_PROTO) !== 0) {
    low = p.proto;
  }
  return ((shape & SHAPE_DST) !== 0 ? p.dst * DST_SCALE : 0) + low;
}

/**
 * Finds the indexable runs of a chain: `runOf[pos]` is the run covering position `pos`, if any.
 * Runs shorter than `minRun` are left to the linear scan.
 */
export function buildRuns(rules: readonly Rule[], minRun: number): (DispatchRun | undefined)[] {
  const n = rules.length;
  const runOf: (DispatchRun | undefined)[] = new Array<DispatchRun | undefined>(n).fill(undefined);
  const keys = rules.map(ruleKey);
  let i = 0;
  while (i < n) {
    const k = keys[i];
    if (k === null || k === undefined) {
      i++;
      continue;
    }
    let j = i + 1;
    while (j < n && keys[j]?.shape === k.shape) j++;
    if (j - i >= Math.max(2, minRun)) {
      const table = new Map<number, number[]>();
      for (let pos = i; pos < j; pos++) {
        const key = (keys[pos] as RuleKey).key;
        const list = table.get(key);
        if (list === undefined) table.set(key, [pos]);
        else list.push(pos);
      }
      const run: DispatchRun = { start: i, end: j, shape: k.shape, table };
      for (let pos = i; pos < j; pos++) runOf[pos] = run;
    }
    i = j;
  }
  return runOf;
}

/** The first position ≥ `pos` in `run` that may match `p`, or `run.end` when none may. */
export function nextCandidate(run: DispatchRun, p: Packet, pos: number): number {
  const key = packetKey(run.shape, p);
  if (key < 0) return run.end;
  const list = run.table.get(key);
  if (list === undefined) return run.end;
  let lo = 0;
  let hi = list.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if ((list[mid] as number) < pos) lo = mid + 1;
    else hi = mid;
  }
  return lo < list.length ? (list[lo] as number) : run.end;
}
