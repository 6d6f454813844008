/**
 * Plain-data helpers: structural equality (to detect no-op writes, which the real API server
 * does not persist) and JSON merge patch (RFC 7386, the `application/merge-patch+json` patch type).
 */

/** A JSON merge patch document: `null` removes a key, objects merge, anything else replaces. */
export type MergePatch = { readonly [key: string]: unknown };

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Structural equality of plain data; key order does not matter, array order does, keys holding `undefined` count as absent. */
export function deepEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (Array.isArray(a)) {
    if (!Array.isArray(b) || a.length !== b.length) return false;
    for (let i = 0; i < a.length; i++) if (!deepEqual(a[i], b[i])) return false;
    return true;
  }
  if (Array.isArray(b)) return false;
  const ao = a as Record<string, unknown>;
  const bo = b as Record<string, unknown>;
  // Same defined keys with equal values: every defined key of a is equal in b, and both have as many.
  const ak = Object.keys(ao);
  let na = 0;
  for (let i = 0; i < ak.length; i++) {
    const k = ak[i] as string;
    const v = ao[k];
    if (v === undefined) continue;
    na++;
    if (!deepEqual(v, bo[k])) return false;
  }
  const bk = Object.keys(bo);
  let nb = 0;
  for (let i = 0; i < bk.length; i++) if (bo[bk[i] as string] !== undefined) nb++;
  return na === nb;
}

/**
 * A deep-frozen copy of plain data (objects and arrays): parts already frozen are shared as they
 * are (a new state shares its unchanged parts with the previous, already frozen one), the rest is
 * copied key by key, in order, then frozen. Anything else (class instances) is kept as it is.
 *
 * Why a copy rather than freezing in place: V8 gives an object made by spread (`{ ...x }`) a
 * hidden class it cannot share once the object is frozen, so every stored object would get a
 * hidden class of its own (memory, and slow megamorphic property access everywhere objects are
 * read). Objects built by assignment share their hidden classes frozen or not.
 */
export function freezeCopy<T>(v: T): T {
  if (typeof v !== 'object' || v === null || Object.isFrozen(v)) return v;
  if (Array.isArray(v)) {
    const a: unknown[] = [];
    for (let i = 0; i < v.length; i++) a.push(freezeCopy(v[i] as unknown));
    return Object.freeze(a) as T;
  }
  const proto: unknown = Object.getPrototypeOf(v);
  if (proto !== Object.prototype && proto !== null) return v;
  const src = v as Record<string, unknown>;
  const out: Record<string, unknown> = proto === null ? (Object.create(null) as Record<string, unknown>) : {};
  const keys = Object.keys(src);
  for (let i = 0; i < keys.length; i++) {
    const k = keys[i] as string;
    out[k] = freezeCopy(src[k]);
  }
  return Object.freeze(out) as T;
}

/** RFC 7386: applies `patch` to `target` without mutating either. */
export function applyMergePatch(target: unknown, patch: unknown): unknown {
  if (!isPlainObject(patch)) return patch;
  const out: Record<string, unknown> = isPlainObject(target) ? { ...target } : {};
  for (const [k, v] of Object.entries(patch)) {
    if (v === null) delete out[k];
    else out[k] = applyMergePatch(out[k], v);
  }
  return out;
}
