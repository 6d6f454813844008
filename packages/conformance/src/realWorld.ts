/**
 * Real-world-shaped dumps: rulesets in the shapes kube-proxy, Calico, Cilium, Docker, kube-router,
 * flannel, Antrea and firewalld write (`fixtures/real-world/NAME.rules`, with the ipsets they
 * need as `NAME.ipsets` in `ipset save` form). Each is loaded by the real `iptables-restore` in a
 * fresh namespace (after `ipset restore` of its sets) and must then print, through the real
 * `iptables-save` and `iptables -t TABLE -L -n -v`, exactly what netsim's `formatSave` and
 * `listTable` print for the same input. What the real tools printed is recorded beside each dump
 * (`NAME.expected`, `NAME.L-n-v.txt`) so the comparison also runs where there is no kernel to ask;
 * `recordRealWorld` rewrites those files from the kernel.
 */
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { formatSave, freshRuleset, listTable, restore, TABLE_NAMES, type Ruleset } from '@netsim/netfilter';
import { LabCommandError, runIn } from './exec.ts';
import { stripSaveComments } from './formatCheck.ts';
import { createNetns, nextPrefix, releaseNetns } from './netns.ts';

/** Where the dumps live: `fixtures/real-world/` of this package. */
export const REAL_WORLD_DIR = fileURLToPath(new URL('../fixtures/real-world/', import.meta.url));

export interface RealWorldDump {
  /** The file name without `.rules`. */
  readonly name: string;
  readonly text: string;
  /** `ipset save` text of the sets the dump names, when it names any. */
  readonly ipsets?: string;
}

/** Every dump of `dir`, by name. */
export function loadRealWorld(dir: string = REAL_WORLD_DIR): RealWorldDump[] {
  return readdirSync(dir)
    .filter((f) => f.endsWith('.rules'))
    .sort()
    .map((f) => {
      const name = f.slice(0, -'.rules'.length);
      const sets = join(dir, `${name}.ipsets`);
      return { name, text: readFileSync(join(dir, f), 'utf8'), ...(existsSync(sets) ? { ipsets: readFileSync(sets, 'utf8') } : {}) };
    });
}

/** The set names an `ipset save` text creates. */
export function ipsetNamesOf(text: string | undefined): string[] {
  if (text === undefined) return [];
  return text
    .split('\n')
    .map((l) => l.trim().split(/\s+/))
    .filter((w) => w[0] === 'create' && w[1] !== undefined)
    .map((w) => w[1] as string);
}

function netsimRuleset(d: RealWorldDump): Ruleset {
  return restore(freshRuleset(), d.text, { file: `${d.name}.rules`, ipsets: ipsetNamesOf(d.ipsets), version: '1.8.9' });
}

/** What netsim prints for `iptables-save` after restoring the dump on a fresh host. */
export function netsimSave(d: RealWorldDump): string {
  return formatSave(netsimRuleset(d));
}

/** `iptables -t TABLE -L -n -v` for every table, each block headed `# TABLE`, as netsim prints them (1.8.9 columns). */
export function netsimListing(d: RealWorldDump): string {
  const rs = netsimRuleset(d);
  return TABLE_NAMES.map((t) => `# ${t}\n${listTable(rs.tables[t], { numeric: true, verbose: true, version: '1.8.9' })}`).join('');
}

export interface KernelOutputs {
  /** `iptables-save` after the restore, comment lines removed; null when the restore failed. */
  readonly save: string | null;
  /** Every table's `-L -n -v`, in the layout of {@link netsimListing}; null when the restore failed. */
  readonly listing: string | null;
  /** The real tool's error when it refused the dump. */
  readonly error: string | null;
}

/** Loads the dump (and its ipsets) with the real tools in a fresh namespace and reads it back. */
export function kernelOutputs(d: RealWorldDump): KernelOutputs {
  const ns = `${nextPrefix()}-rw`;
  createNetns(ns);
  try {
    try {
      if (d.ipsets !== undefined) runIn(ns, 'ipset', ['restore'], { input: d.ipsets });
      runIn(ns, 'iptables-restore', [], { input: d.text });
    } catch (e) {
      if (e instanceof LabCommandError) return { save: null, listing: null, error: e.stderr.trim() === '' ? e.message : e.stderr.trim() };
      throw e;
    }
    const save = stripSaveComments(runIn(ns, 'iptables-save', []));
    const listing = TABLE_NAMES.map((t) => `# ${t}\n${runIn(ns, 'iptables', ['-t', t, '-L', '-n', '-v'])}`).join('');
    return { save, listing, error: null };
  } finally {
    releaseNetns(ns);
  }
}

/** The recorded outputs of a dump (`NAME.expected`, `NAME.L-n-v.txt`). */
export function recordedOutputs(d: RealWorldDump, dir: string = REAL_WORLD_DIR): { readonly save: string; readonly listing: string } {
  return { save: readFileSync(join(dir, `${d.name}.expected`), 'utf8'), listing: readFileSync(join(dir, `${d.name}.L-n-v.txt`), 'utf8') };
}

/**
 * Rewrites every dump's recorded outputs from the real tools (root, namespaces, iptables 1.8.9
 * nf_tables, ipset): `node --import tsx packages/conformance/src/recordRealWorld.ts`.
 */
export function recordRealWorld(dir: string = REAL_WORLD_DIR): string[] {
  const lines: string[] = [];
  for (const d of loadRealWorld(dir)) {
    const k = kernelOutputs(d);
    if (k.save === null || k.listing === null) throw new Error(`${d.name}: the real iptables-restore refused the dump: ${k.error ?? ''}`);
    writeFileSync(join(dir, `${d.name}.expected`), k.save);
    writeFileSync(join(dir, `${d.name}.L-n-v.txt`), k.listing);
    lines.push(`${d.name}: recorded`);
  }
  return lines;
}
