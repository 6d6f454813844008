/**
 * @internal `-m policy` (libxt_policy): IPsec policy of the packet. `--dir` and `--pol` first, then
 * `--strict`, then each policy element (options after a `--next` start a new one) printed
 * `--reqid --spi --proto --mode --tunnel-dst --tunnel-src`, `--spi` in hex, `--proto` by name.
 */
import { OptionTable, OptionTracker, type ExtensionInstance, type OptionUse } from '../extension.ts';
import { paramProblem } from '../failure.ts';
import { formatIpv4 } from '../ip.ts';
import { xtablesHost } from '../hostAddress.ts';
import { lookupProtocol } from '../names.ts';
import type { Match } from '../types.ts';
import { hexOf, uintBase0, xtMatchModule, type XtDefinition, type XtMatchModule } from './define.ts';

const ELEMENT_ORDER = ['reqid', 'spi', 'proto', 'mode', 'tunnel-dst', 'tunnel-src'] as const;
const PROTO_NAMES: ReadonlyMap<number, string> = new Map([
  [50, 'esp'],
  [51, 'ah'],
  [108, 'ipcomp'],
]);

/** The option table (the module is not built from it, but `index.ts` lists it as the others). */
export const POLICY: XtDefinition = {
  name: 'policy',
  options: [
    { name: 'dir', args: 1 },
    { name: 'pol', args: 1 },
    { name: 'strict', args: 0 },
    { name: 'reqid', args: 1, invert: true, multi: true },
    { name: 'spi', args: 1, invert: true, multi: true },
    { name: 'proto', args: 1, invert: true, multi: true },
    { name: 'mode', args: 1, invert: true, multi: true },
    { name: 'tunnel-src', args: 1, invert: true, multi: true },
    { name: 'tunnel-dst', args: 1, invert: true, multi: true },
    { name: 'next', args: 0, multi: true },
  ],
  list(args) {
    const out: string[] = ['policy match'];
    const elements = args.filter((a) => a === '--next').length + 1;
    const numbered = args.includes('--strict') || elements > 1;
    let k = 0;
    let started = false;
    for (let i = 0; i < args.length; i++) {
      const w = args[i] as string;
      if (w === '!') {
        out.push('!');
        continue;
      }
      const name = w.slice(2);
      if (name === 'next') {
        k++;
        started = false;
        continue;
      }
      if ((ELEMENT_ORDER as readonly string[]).includes(name) && numbered && !started) {
        out.push(`[${k}]`);
        started = true;
      }
      if (name === 'strict') {
        out.push('strict');
        continue;
      }
      const v = args[++i] ?? '';
      const protoNumber = [...PROTO_NAMES].find(([, n]) => n === v)?.[0];
      out.push(name, name === 'proto' && protoNumber !== undefined ? String(protoNumber) : v);
    }
    return out.join(' ');
  },
};

const OPTIONS = new OptionTable(POLICY.options);

type Element = Map<string, { invert: boolean; value: string }>;

function emptyElement(k: number): Error {
  return paramProblem(`policy match: empty policy element ${k}. --strict is in effect, but at least one of reqid, spi, tunnel-src, tunnel-dst, proto or mode is required.`);
}

class PolicyInstance extends OptionTracker implements ExtensionInstance<Match> {
  readonly name = 'policy';
  readonly spec = OPTIONS;
  private dir: string | undefined;
  private pol: string | undefined;
  private readonly elements: Element[] = [new Map<string, { invert: boolean; value: string }>()];
  constructor() {
    super('policy', OPTIONS);
  }
  option(use: OptionUse): void {
    this.use(use, OPTIONS.exact(use.name)!);
    const v = use.values[0] ?? '';
    const at = use.argIndex + 1;
    const cur = this.elements[this.elements.length - 1] as Element;
    switch (use.name) {
      case 'dir':
        if (v !== 'in' && v !== 'out') throw paramProblem(`policy_match: invalid dir "${v}"`, at);
        this.dir = v;
        return;
      case 'pol':
        if (v !== 'none' && v !== 'ipsec') throw paramProblem(`policy match: invalid policy "${v}"`, at);
        this.pol = v;
        return;
      case 'strict':
        return;
      case 'next':
        if (this.elements.length === 4) throw paramProblem('policy match: maximum policy depth reached', use.argIndex);
        this.elements.push(new Map<string, { invert: boolean; value: string }>());
        return;
    }
    if (cur.has(use.name)) throw paramProblem(`policy match: double --${use.name} option`, use.argIndex);
    let value = v;
    if (use.name === 'reqid' || use.name === 'spi') {
      const n = uintBase0(v);
      if (n === undefined || n > 0xffffffff) throw paramProblem(`policy: bad value for option "--${use.name}", or out of range (0-4294967295).\n`, at);
      value = use.name === 'spi' ? hexOf(n) : String(n);
    } else if (use.name === 'proto') {
      const n = lookupProtocol(v.toLowerCase());
      if (n === undefined || !PROTO_NAMES.has(n)) throw paramProblem(`policy match: protocol must be ah/esp/ipcomp`, at);
      value = PROTO_NAMES.get(n) as string;
    } else if (use.name === 'mode') {
      if (v !== 'transport' && v !== 'tunnel') throw paramProblem(`policy match: invalid mode "${v}"`, at);
    } else {
      const slash = v.indexOf('/');
      const a = xtablesHost(slash < 0 ? v : v.slice(0, slash));
      const prefix = slash < 0 ? 32 : Number(v.slice(slash + 1));
      if (a === undefined || !(prefix >= 0 && prefix <= 32)) throw paramProblem(`host/network \`${v}' not found`, at);
      value = prefix === 32 ? formatIpv4(a) : `${formatIpv4(a)}/${prefix}`;
    }
    cur.set(use.name, { invert: use.invert, value });
  }
  finish(): Match {
    if (this.dir === undefined) throw paramProblem('policy match: neither --dir in nor --dir out specified');
    // Without --pol the policy is ipsec (the flag's default in libxt_policy).
    const pol = this.pol ?? 'ipsec';
    const strict = this.has('strict');
    const last = this.elements[this.elements.length - 1] as Element;
    if (pol === 'none') {
      if (strict) throw paramProblem('policy match: policy none but --strict given');
      if (this.elements.length > 1) throw paramProblem('policy match: policy none but policy given');
      // No element is kept with policy none (its length stays 0).
      last.clear();
    } else if (strict) {
      this.elements.forEach((e, k) => {
        if (e.size === 0) throw emptyElement(k);
      });
    }
    // The framework's final check of the option table.
    if (this.has('next') && !strict) throw paramProblem('policy: option "--next" also requires "--strict".\n');
    const args = ['--dir', this.dir, '--pol', pol];
    if (strict) args.push('--strict');
    this.elements.forEach((e, k) => {
      if (e.size === 0) return;
      if (k > 0) args.push('--next');
      for (const name of ELEMENT_ORDER) {
        const x = e.get(name);
        if (x === undefined) continue;
        if (x.invert) args.push('!');
        args.push(`--${name}`, x.value);
      }
    });
    return { kind: 'unknown', module: 'policy', args };
  }
}

/** The definition's printing, with its own parser (elements separated by `--next`). */
export const POLICY_MODULE: XtMatchModule = { ...xtMatchModule(POLICY), options: OPTIONS, create: (): ExtensionInstance<Match> => new PolicyInstance() };
