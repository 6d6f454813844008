/**
 * The `conntrack` command line (conntrack-tools 1.4.7) over a host's table: `-L`, `-D`, `-F`,
 * `-C`, with the filters controllers use (`-p`, `-s/--orig-src`, `-d/--orig-dst`,
 * `-r/--reply-src`, `-q/--reply-dst`, `--sport/--dport` and the `--orig-port-*`/`--reply-port-*`
 * forms after `-p tcp|udp`, `--state` after `-p tcp`, `-m/--mark`, `-n/--src-nat [IP]`,
 * `-g/--dst-nat [IP[:PORT]]`, `-o extended`). Output, messages and exit statuses are the real
 * tool's, checked against it: entries on stdout, the summary line on stderr, exit 1 when `-D`
 * deletes nothing, 2 for usage errors. Entries are listed in creation order.
 */
import { tryParseIpv4 } from '@netsim/netfilter';
import { formatCtEntry, type ConntrackTable, type CtEntry, type TcpCtState } from './conntrack.ts';

const PREFIX = 'conntrack v1.4.7 (conntrack-tools): ';
const HINT = "Try `conntrack -h' or 'conntrack --help' for more information.";

/** What the command printed and returned. */
export interface CliResult {
  readonly stdout: string;
  readonly stderr: string;
  readonly exitCode: number;
}

type Command = 'L' | 'D' | 'F' | 'C';

interface Filter {
  proto?: number;
  origSrc?: number;
  origDst?: number;
  replySrc?: number;
  replyDst?: number;
  origSport?: number;
  origDport?: number;
  replySport?: number;
  replyDport?: number;
  state?: TcpCtState;
  mark?: { value: number; mask: number };
  srcNat?: { ip?: number; port?: number };
  dstNat?: { ip?: number; port?: number };
  extended: boolean;
}

class UsageError extends Error {}

function usage(msg: string): never {
  throw new UsageError(msg);
}

const PROTOS: { readonly [name: string]: number } = { tcp: 6, udp: 17, icmp: 1, sctp: 132, udplite: 136, dccp: 33, gre: 47, icmpv6: 58 };
const STATES: readonly TcpCtState[] = ['SYN_SENT', 'SYN_RECV', 'ESTABLISHED', 'FIN_WAIT', 'CLOSE_WAIT', 'LAST_ACK', 'TIME_WAIT', 'CLOSE', 'SYN_SENT2'];

function ipArg(v: string | undefined): number {
  const a = v === undefined ? undefined : tryParseIpv4(v);
  if (a === undefined) usage(`Invalid IP address \`${v ?? ''}'`);
  return a;
}

/** conntrack-tools parses ports with strtoul into a u16: garbage is 0, large values wrap. */
function portArg(v: string | undefined): number {
  const m = /^[0-9]+/.exec(v ?? '');
  return m === null ? 0 : Number(m[0]) & 0xffff;
}

function natArg(v: string | undefined): { ip?: number; port?: number } {
  if (v === undefined || v.startsWith('-')) return {};
  const colon = v.indexOf(':');
  const ip = ipArg(colon < 0 ? v : v.slice(0, colon));
  return colon < 0 ? { ip } : { ip, port: portArg(v.slice(colon + 1)) };
}

function parse(argv: readonly string[]): { cmd: Command; f: Filter } {
  let cmd: Command | undefined;
  const f: Filter = { extended: false };
  const setCmd = (c: Command): void => {
    if (cmd !== undefined && cmd !== c) usage('Invalid commands combination');
    cmd = c;
  };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i] ?? '';
    const next = (): string | undefined => argv[++i];
    const ported = f.proto === 6 || f.proto === 17 || f.proto === 132;
    switch (a) {
      case '-L':
      case '--dump':
        setCmd('L');
        // An optional table name follows.
        if (argv[i + 1] === 'conntrack') i++;
        break;
      case '-D':
      case '--delete':
        setCmd('D');
        break;
      case '-F':
      case '--flush':
        setCmd('F');
        break;
      case '-C':
      case '--count':
        setCmd('C');
        break;
      case '-p':
      case '--proto':
      case '--protonum': {
        const v = next() ?? '';
        const n = PROTOS[v.toLowerCase()] ?? (/^[0-9]+$/.test(v) ? Number(v) : undefined);
        if (n === undefined || n > 255) usage(`\`${v}' unsupported protocol`);
        f.proto = n;
        break;
      }
      case '-s':
      case '--src':
      case '--orig-src':
        f.origSrc = ipArg(next());
        break;
      case '-d':
      case '--dst':
      case '--orig-dst':
        f.origDst = ipArg(next());
        break;
      case '-r':
      case '--reply-src':
        f.replySrc = ipArg(next());
        break;
      case '-q':
      case '--reply-dst':
        f.replyDst = ipArg(next());
        break;
      case '-m':
      case '--mark': {
        const v = next() ?? '';
        const [val, mask] = v.split('/');
        f.mark = { value: Number(val) >>> 0, mask: mask === undefined ? 0xffffffff : Number(mask) >>> 0 };
        break;
      }
      case '-n':
      case '--src-nat':
        f.srcNat = natArg(argv[i + 1]);
        if (f.srcNat.ip !== undefined) i++;
        break;
      case '-g':
      case '--dst-nat':
        f.dstNat = natArg(argv[i + 1]);
        if (f.dstNat.ip !== undefined) i++;
        break;
      case '-o':
      case '--output': {
        const v = next() ?? '';
        for (const o of v.split(',')) if (o === 'extended') f.extended = true;
        break;
      }
      default: {
        // Protocol options exist only after -p names a protocol that has them.
        const portOpt: { [k: string]: 'origSport' | 'origDport' | 'replySport' | 'replyDport' } = {
          '--sport': 'origSport',
          '--orig-port-src': 'origSport',
          '--dport': 'origDport',
          '--orig-port-dst': 'origDport',
          '--reply-port-src': 'replySport',
          '--reply-port-dst': 'replyDport',
        };
        const field = portOpt[a];
        if (field !== undefined && ported) {
          f[field] = portArg(next());
          break;
        }
        if (a === '--state' && f.proto === 6) {
          const v = (next() ?? '').toUpperCase();
          if (!(STATES as readonly string[]).includes(v)) usage(`Unknown state \`${v}'`);
          f.state = v as TcpCtState;
          break;
        }
        usage(`unknown option \`${a}'`);
      }
    }
  }
  if (cmd === undefined) usage('no command specified');
  return { cmd, f };
}

function matches(e: CtEntry, f: Filter): boolean {
  const o = e.orig;
  const r = e.reply;
  if (f.proto !== undefined && o.proto !== f.proto) return false;
  if (f.origSrc !== undefined && o.src !== f.origSrc) return false;
  if (f.origDst !== undefined && o.dst !== f.origDst) return false;
  if (f.replySrc !== undefined && r.src !== f.replySrc) return false;
  if (f.replyDst !== undefined && r.dst !== f.replyDst) return false;
  if (f.origSport !== undefined && o.sport !== f.origSport) return false;
  if (f.origDport !== undefined && o.dport !== f.origDport) return false;
  if (f.replySport !== undefined && r.sport !== f.replySport) return false;
  if (f.replyDport !== undefined && r.dport !== f.replyDport) return false;
  if (f.state !== undefined && e.tcpState !== f.state) return false;
  if (f.mark !== undefined && ((e.mark & f.mark.mask) >>> 0) !== ((f.mark.value & f.mark.mask) >>> 0)) return false;
  if (f.srcNat !== undefined) {
    if (!e.srcNat) return false;
    if (f.srcNat.ip !== undefined && r.dst !== f.srcNat.ip) return false;
    if (f.srcNat.port !== undefined && r.dport !== f.srcNat.port) return false;
  }
  if (f.dstNat !== undefined) {
    if (!e.dstNat) return false;
    if (f.dstNat.ip !== undefined && r.src !== f.dstNat.ip) return false;
    if (f.dstNat.port !== undefined && r.sport !== f.dstNat.port) return false;
  }
  return true;
}

function line(e: CtEntry, nowMs: number, f: Filter): string {
  const s = formatCtEntry(e, nowMs);
  return f.extended ? `${'ipv4'.padEnd(8)} 2 ${s}` : s;
}

/**
 * Runs `conntrack ARGS…` against `table` at `nowMs`. `-D` removes the matching entries.
 *
 * @example
 * conntrackCommand(node.conntrack, ['-D', '-p', 'udp', '--dst-nat', '203.0.113.10'], nowMs);
 * // { stdout: 'udp      17 …\n', stderr: 'conntrack v1.4.7 (conntrack-tools): 1 flow entries have been deleted.\n', exitCode: 0 }
 */
export function conntrackCommand(table: ConntrackTable, argv: readonly string[], nowMs: number): CliResult {
  let parsed: { cmd: Command; f: Filter };
  try {
    parsed = parse(argv);
  } catch (e) {
    if (e instanceof UsageError) return { stdout: '', stderr: `${PREFIX}${e.message}\n${HINT}\n`, exitCode: 2 };
    throw e;
  }
  const { cmd, f } = parsed;
  const live = table.list(nowMs);
  switch (cmd) {
    case 'F':
      table.flush();
      return { stdout: '', stderr: `${PREFIX}connection tracking table has been emptied.\n`, exitCode: 0 };
    case 'C':
      return { stdout: `${live.length}\n`, stderr: '', exitCode: 0 };
    case 'L': {
      const hit = live.filter((e) => matches(e, f));
      return { stdout: hit.map((e) => `${line(e, nowMs, f)}\n`).join(''), stderr: `${PREFIX}${hit.length} flow entries have been shown.\n`, exitCode: 0 };
    }
    case 'D': {
      const hit = live.filter((e) => matches(e, f));
      const out = hit.map((e) => `${line(e, nowMs, f)}\n`).join('');
      for (const e of hit) table.remove(e);
      return { stdout: out, stderr: `${PREFIX}${hit.length} flow entries have been deleted.\n`, exitCode: hit.length > 0 ? 0 : 1 };
    }
  }
}
