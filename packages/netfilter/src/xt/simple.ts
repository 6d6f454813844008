/**
 * @internal Small extensions whose options print back as given or with one normalisation each:
 * quota, nfacct, cgroup, devgroup, length, mac, connlabel, pkttype, helper, cluster.
 */
import { Failure, paramProblem } from '../failure.ts';
import { argOf, hex8, uintBase0, valMaskText, xtInt, xtIntOption, xtValMask, type XtDefinition } from './define.ts';
import { rangeOption } from './misc.ts';

const decimal = (ext: string, opt: string, max: number) => (v: readonly string[], at: number): readonly string[] => {
  const n = uintBase0(v[0] ?? '');
  if (n === undefined || n > max) throw paramProblem(`${ext}: bad value for option "--${opt}", or out of range (0-${max}).\n`, at);
  return [String(n)];
};

/** `-m quota --quota BYTES` (printed in decimal). */
export const QUOTA: XtDefinition = {
  name: 'quota',
  options: [{ name: 'quota', args: 1, invert: true, parse: xtIntOption('quota', 'quota', 64) }],
  finish(s) {
    if (!s.has('quota')) s.missing('quota');
  },
  list: (args) => `quota: ${args[args.length - 1] ?? ''} bytes`,
};

/** `-m nfacct --nfacct-name NAME`: iptables-save prints two spaces before the name. */
export const NFACCT: XtDefinition = {
  name: 'nfacct',
  options: [
    {
      name: 'nfacct-name',
      args: 1,
      parse: (v, at) => {
        const n = v[0] ?? '';
        if (n.length > 31) throw paramProblem('nfacct: Bad value for "--nfacct-name" option: "name too long"', at);
        return [n];
      },
    },
  ],
  finish(s) {
    if (!s.has('nfacct-name')) s.missing('nfacct-name');
  },
  saveWords: (name, values, out) => out.push(`--${name} `, ...values),
  list: (args) => `nfacct-name  ${args[1] ?? ''}`,
  // It only counts (a quota lives in the accounting object, which netsim does not model).
  compile: () => null,
};

/** `-m cgroup`: `--cgroup` (classid, printed in decimal) or `--path`. */
export const CGROUP: XtDefinition = {
  name: 'cgroup',
  options: [
    { name: 'cgroup', args: 1, invert: true, parse: decimal('cgroup', 'cgroup', 0xffffffff) },
    { name: 'path', args: 1, invert: true },
  ],
  // xt_cgroup's check: a path or a classid, not both and not neither.
  finish(s, env) {
    if (s.has('cgroup') === s.has('path')) env.rejectRule('Invalid argument');
  },
  list: (args) => `cgroup ${args[0] === '!' ? '! ' : ''}${args[args.length - 1] ?? ''}`,
};

/** A stock /etc/iproute2/group: device group names devgroup maps. */
const DEV_GROUPS: ReadonlyMap<string, number> = new Map([['default', 0]]);

function group(opt: string) {
  return (v: readonly string[], at: number): readonly string[] => {
    const mm = xtValMask('devgroup', opt, v[0] ?? '', at, DEV_GROUPS);
    return [valMaskText(mm.value, mm.mask, DEV_GROUPS)];
  };
}

/** `-m devgroup`: groups printed in hex; the source group needs an input hook, the destination an output one. */
export const DEVGROUP: XtDefinition = {
  name: 'devgroup',
  options: [
    { name: 'src-group', args: 1, invert: true, parse: group('src-group') },
    { name: 'dst-group', args: 1, invert: true, parse: group('dst-group') },
  ],
  finish(s) {
    if (s.given.size === 0) throw paramProblem("devgroup match: You must specify either '--src-group' or '--dst-group'");
  },
  hooks(args) {
    const src = args.includes('--src-group');
    const dst = args.includes('--dst-group');
    if (src && dst) return ['FORWARD'];
    if (src) return ['PREROUTING', 'INPUT', 'FORWARD'];
    if (dst) return ['FORWARD', 'OUTPUT', 'POSTROUTING'];
    return undefined;
  },
  list: (args) => args.map((a) => a.replace(/^--/, '')).join(' '),
};

/** `-m length --length MIN[:MAX]`: an open end prints as 0 or 65535; one value prints alone. */
export const LENGTH: XtDefinition = {
  name: 'length',
  options: [
    {
      name: 'length',
      args: 1,
      invert: true,
      parse: rangeOption('length', 'length', 0xffffn),
    },
  ],
  finish(s) {
    if (!s.has('length')) s.missing('length');
  },
  list: (args) => `length ${args[0] === '!' ? '!' : ''}${args[args.length - 1] ?? ''}`,
};

/**
 * XTTYPE_ETHERMAC (xtopt_parse_ethermac): six `strtoul(…, 16)` fields separated by `:`, each
 * spanning at most two characters (an empty field reads 0); printed `%02x`, colon-separated.
 */
function etherMac(text: string, at: number): string {
  const bytes: string[] = [];
  let arg = 0;
  for (let i = 0; i < 6; i++) {
    const m = /^[ \t\n\v\f\r]*([+-]?)(?:0[xX](?=[0-9a-fA-F]))?([0-9a-fA-F]+)/.exec(text.slice(arg));
    const end = m === null ? arg : arg + m[0].length;
    const stop = i < 5 ? ':' : undefined;
    if (end - arg > 2 || text[end] !== stop) throw paramProblem('Invalid MAC address specified.', at);
    let n = m === null ? 0 : parseInt(m[2] as string, 16) & 0xff;
    if (m?.[1] === '-') n = (256 - n) & 0xff;
    bytes.push(n.toString(16).padStart(2, '0'));
    arg = end + 1;
  }
  return bytes.join(':');
}

/** `-m mac --mac-source`: printed in lower case, two digits a byte. */
export const MAC: XtDefinition = {
  name: 'mac',
  options: [
    {
      name: 'mac-source',
      args: 1,
      invert: true,
      parse: (v, at) => [etherMac(v[0] ?? '', at)],
    },
  ],
  finish(s) {
    if (!s.has('mac-source')) s.missing('mac-source');
  },
  list: (args) => `MAC ${args[0] === '!' ? '! ' : ''}${args[args.length - 1] ?? ''}`,
};

/** `-m connlabel --label NAME [--set]`: the label printed quoted. */
export const CONNLABEL: XtDefinition = {
  name: 'connlabel',
  options: [
    {
      name: 'label',
      args: 1,
      mand: true,
      invert: true,
      // Names come from /etc/xtables/connlabel.conf, which a netsim host does not have: numbers only.
      parse: (v, at) => {
        const n = uintBase0(v[0] ?? '');
        if (n === undefined || n > 0xffff) {
          throw new Failure('param', `label '${v[0] ?? ''}' not found or invalid value`, {
            argIndex: at,
            warning: 'Warning: cannot open /etc/xtables/connlabel.conf: No such file or directory\n',
          });
        }
        return [String(n)];
      },
    },
    { name: 'set', args: 0 },
  ],
  quoted: ['label'],
  list: (args) => `connlabel ${args[0] === '!' ? '! ' : ''}${argOf(args, 'label')?.value ?? ''}${args.includes('--set') ? ' set' : ''}`,
};

export const PKTTYPE: XtDefinition = {
  name: 'pkttype',
  options: [
    {
      name: 'pkt-type',
      args: 1,
      invert: true,
      parse: (v, at) => {
        const w = (v[0] ?? '').toLowerCase();
        const names = ['unicast', 'broadcast', 'multicast', 'host', 'otherhost', 'outgoing', 'loopback'];
        const found = names.find((n) => n === w);
        if (found === undefined) throw paramProblem(`Bad packet type '${v[0] ?? ''}'`, at);
        return [found === 'host' ? 'unicast' : found];
      },
    },
  ],
  finish(s) {
    if (!s.has('pkt-type')) s.missing('pkt-type');
  },
  list: (args) => `PKTTYPE ${args[0] === '!' ? '!=' : '='} ${args[args.length - 1] ?? ''}`,
};

export const HELPER: XtDefinition = {
  name: 'helper',
  options: [{ name: 'helper', args: 1, invert: true }],
  finish(s) {
    if (!s.has('helper')) s.missing('helper');
  },
  list: (args) => `helper match ${args[0] === '!' ? '! ' : ''}"${args[args.length - 1] ?? ''}"`,
};

/**
 * `-m cluster`: `--cluster-local-node N` is stored as the node mask; printed mask (`0x%08x`),
 * total, seed (`0x%08x`).
 */
export const CLUSTER: XtDefinition = {
  name: 'cluster',
  options: [
    { name: 'cluster-total-nodes', args: 1, mand: true, parse: xtIntOption('cluster', 'cluster-total-nodes', 32, 1n, 32n) },
    { name: 'cluster-local-node', args: 1, invert: true, excl: ['cluster-local-nodemask'], parse: xtIntOption('cluster', 'cluster-local-node', 32, 1n, 32n) },
    {
      name: 'cluster-local-nodemask',
      args: 1,
      invert: true,
      excl: ['cluster-local-node'],
      parse: (v, at) => [hex8(Number(xtInt('cluster', 'cluster-local-nodemask', v[0] ?? '', 1n, 32n, at)))],
    },
    { name: 'cluster-hash-seed', args: 1, mand: true, parse: (v, at) => [hex8(Number(xtInt('cluster', 'cluster-hash-seed', v[0] ?? '', 0n, 0xffffffffn, at)))] },
  ],
  order: ['cluster-local-nodemask', 'cluster-total-nodes', 'cluster-hash-seed'],
  finish(s) {
    // cluster_check, then the framework's check of the table (mandatory options, exclusions).
    const total = s.value('cluster-total-nodes');
    const node = s.get('cluster-local-node');
    const mask = s.get('cluster-local-nodemask');
    const seed = s.has('cluster-hash-seed');
    const limit = total === undefined ? 0 : 2 ** Number(total);
    if (total !== undefined && node !== undefined && seed) {
      if (2 ** (Number(node.values[0]) - 1) >= limit) throw paramProblem("cluster match: `--cluster-local-node' must be <= `--cluster-total-nodes'");
    } else if (total !== undefined && mask !== undefined && seed) {
      if (Number(mask.values[0]) >= limit) throw paramProblem("cluster match: `--cluster-local-nodemask' too big for `--cluster-total-nodes'");
    } else if (node === undefined && mask === undefined) {
      throw paramProblem("cluster match: `--cluster-local-node' or`--cluster-local-nodemask' is missing");
    }
    if (node !== undefined && mask === undefined) {
      s.set('cluster-local-nodemask', [hex8(2 ** (Number(node.values[0]) - 1))], node.invert);
      s.delete('cluster-local-node');
    }
  },
  list: (args) =>
    `cluster ${argOf(args, 'cluster-local-nodemask')?.invert === true ? '!' : ''}node_mask=${argOf(args, 'cluster-local-nodemask')?.value ?? ''} total_nodes=${argOf(args, 'cluster-total-nodes')?.value ?? ''} hash_seed=${argOf(args, 'cluster-hash-seed')?.value ?? ''}`,
};
