/**
 * A hand-written recursive-descent parser for the `nft -f` language (the subset netsim models,
 * see docs/nftables.md): `define`, `table … { … }` blocks, and `add`/`create`/`insert`/`replace`/
 * `delete`/`destroy`/`flush` commands. Rule statements are typed as they are read, since the
 * left-hand expression decides the type of its constants.
 */
import type { BaseSpecParsed, Command, DistributiveOmit, Named, RawAtom, RawData, RawElement, RuleBody, SetDecl } from './commands.ts';
import { isBitmask, parseNumber, parseTime, SET_TYPE_NAMES } from './datatypes.ts';
import { automerge, keyId, LocatedError, tokSpan, typeAtom, typeElement, typeToken } from './elements.ts';
import { closest, type Diagnostic, type Span } from './errors.ts';
import { Lexer, type Token } from './lexer.ts';
import type {
  ChainType,
  DataType,
  Element,
  Expr,
  Family,
  Hook,
  MapLookup,
  MatchOp,
  NatFlag,
  NatKind,
  NftObject,
  NftVersion,
  Rhs,
  SetFlag,
  Source,
  Stmt,
  Value,
} from './types.ts';

export interface ParseResult {
  readonly commands: readonly Command[];
  readonly diagnostics: readonly Diagnostic[];
  /** The scanner's line numbering against the text's, when a quoted string spanned lines (see {@link Lexer.lineMap}). */
  readonly lineMap?: readonly number[];
}

const KEYWORDS: ReadonlySet<string> = new Set([
  'table', 'chain', 'set', 'map', 'rule', 'element', 'add', 'create', 'insert', 'replace', 'delete', 'flush', 'define',
  'accept', 'drop', 'continue', 'return', 'jump', 'goto', 'queue', 'counter', 'log', 'limit', 'reject', 'notrack',
  'masquerade', 'snat', 'dnat', 'redirect', 'comment', 'ip', 'tcp', 'udp', 'th', 'meta', 'ct', 'fib', 'numgen', 'vmap',
  'type', 'hook', 'priority', 'policy', 'flags', 'elements', 'timeout', 'typeof', 'handle', 'position', 'index', 'ruleset',
  'mark', 'iifname', 'oifname', 'iif', 'oif', 'icmp', 'update', 'to', 'with', 'inet', 'size', 'counter', 'state', 'status',
]);

/**
 * The words nft 1.0.6's scanner always reads as keywords (in every scope): none of them can name a
 * table, chain, set or map ("syntax error, unexpected counter, expecting string"). Found by
 * offering each of the parser's token names as a chain, set and table name to the real nft.
 * Other keywords (`saddr`, `filter`, `input`…) are keywords only inside their expression and
 * are fine as names.
 */
const GLOBAL_KEYWORDS: ReadonlySet<string> = new Set([
  'accept', 'add', 'ah', 'all', 'arp', 'auto-merge', 'bridge', 'cgroup', 'chain', 'comment', 'comp', 'constant',
  'continue', 'counter', 'cpu', 'create', 'ct', 'day', 'dccp', 'define', 'delete', 'describe', 'device', 'devices',
  'dnat', 'drop', 'dst', 'dup', 'dynamic', 'ecn', 'element', 'elements', 'esp', 'ether', 'exists', 'expires',
  'export', 'exthdr', 'fib', 'flags', 'flow', 'flowtable', 'flush', 'frag', 'fwd', 'gc-interval', 'get', 'goto',
  'handle', 'hbh', 'hook', 'hour', 'ibriport', 'ibrname', 'icmp', 'icmpv6', 'igmp', 'iif', 'iifgroup', 'iifname',
  'iiftype', 'import', 'include', 'index', 'inet', 'insert', 'interval', 'ip', 'ip6', 'ipsec', 'jhash', 'jump',
  'limit', 'list', 'log', 'map', 'mark', 'masquerade', 'meta', 'meter', 'mh', 'missing', 'monitor', 'netdev',
  'nftrace', 'notrack', 'numgen', 'obriport', 'obrname', 'offload', 'oif', 'oifgroup', 'oifname', 'oiftype', 'osf',
  'pkttype', 'policy', 'position', 'priority', 'queue', 'quota', 'random', 'redefine', 'redirect', 'reject',
  'rename', 'replace', 'reset', 'return', 'rt', 'rt0', 'rt2', 'rtclassid', 'rule', 'ruleset', 'sctp', 'secmark',
  'set', 'size', 'skgid', 'skuid', 'snat', 'socket', 'srh', 'symhash', 'synproxy', 'table', 'tcp', 'th', 'time',
  'timeout', 'tproxy', 'type', 'typeof', 'udp', 'udplite', 'undefine', 'update', 'vlan', 'vmap', 'xt',
]);

/** How bison names a token in "unexpected X". */
function tokenName(t: Token): string {
  switch (t.kind) {
    case 'eof':
      return 'end of file';
    case 'newline':
      return 'newline';
    case 'string':
      return 'quoted string';
    case 'number':
      return 'number';
    case 'addr':
      return 'string';
    case 'var':
      return 'variable';
    case 'junk':
      return 'junk';
    case 'word':
      return KEYWORDS.has(t.text) || GLOBAL_KEYWORDS.has(t.text) ? t.text : 'string';
    case 'punct':
      switch (t.text) {
        case ';':
          return 'semicolon';
        case ',':
          return 'comma';
        case ':':
          return 'colon';
        case '.':
          return 'dot';
        case '-':
        case '/':
          return t.text;
        case '==':
          return "'=='";
        default:
          return `'${t.text}'`;
      }
  }
}

/**
 * An error bison recovers from: a syntax error (`token` is the one it could not place) or an
 * action's `YYERROR` (an unknown variable, a redefinition: `token` is the last one read).
 */
class SyntaxError_ extends LocatedError {
  constructor(
    message: string,
    span: Span,
    readonly token: Token,
  ) {
    super(message, span, undefined, 'syntax');
  }
}

/**
 * An action's `YYERROR` in a rule of the form `block: block item stmt_separator` (a duplicated
 * `comment`): bison pops the block with the rule, so the block around it recovers, from after the
 * separator already read (the next line goes too).
 */
class BlockActionError extends SyntaxError_ {
  popped = false;
}

/** bison gave up: the input ended while it recovered, or the tenth error was reached. */
class ParseAbort extends Error {}

function syntax(t: Token, expecting?: string): SyntaxError_ {
  return new SyntaxError_(`syntax error, unexpected ${tokenName(t)}${expecting !== undefined ? `, expecting ${expecting}` : ''}`, tokSpan(t), t);
}

const HOOKS: ReadonlySet<string> = new Set(['prerouting', 'input', 'forward', 'output', 'postrouting']);
const STD_PRIO: Readonly<Record<string, number>> = { raw: -300, mangle: -150, dstnat: -100, filter: 0, security: 50, srcnat: 100 };

/** Meta keys, with their types (`nft describe meta KEY`). */
const META_KEYS: Readonly<Record<string, DataType>> = {
  l4proto: 'inet_proto',
  mark: 'mark',
  iifname: 'ifname',
  oifname: 'ifname',
  iif: 'iface_index',
  oif: 'iface_index',
  nfproto: 'nf_proto',
  pkttype: 'pkt_type',
  length: 'integer',
  protocol: 'ether_type',
  priority: 'classid',
  skuid: 'uid',
  skgid: 'gid',
  iiftype: 'iface_type',
  oiftype: 'iface_type',
  iifgroup: 'devgroup',
  oifgroup: 'devgroup',
  cpu: 'integer',
  cgroup: 'integer',
  random: 'integer',
  nftrace: 'u8',
  rtclassid: 'integer',
  secmark: 'integer',
  ibrname: 'ifname',
  obrname: 'ifname',
};
/** Every meta key nft 1.0.6 knows, in the order its "known keys are" message lists them. */
const NFT_META_KEYS: readonly string[] = [
  'length', 'protocol', 'priority', 'mark', 'iif', 'oif', 'iifname', 'oifname', 'iiftype', 'oiftype', 'skuid', 'skgid',
  'nftrace', 'rtclassid', 'secmark', 'nfproto', 'l4proto', 'ibrname', 'obrname', 'pkttype', 'cpu', 'iifgroup', 'oifgroup',
  'cgroup', 'random', 'ipsec', 'iifkind', 'oifkind', 'ibrpvid', 'ibrvproto', 'time', 'day', 'hour', 'sdif', 'sdifname',
];
/** Meta keys that may be written without `meta`. */
const BARE_META: ReadonlySet<string> = new Set(['mark', 'iifname', 'oifname', 'iif', 'oif', 'pkttype', 'iiftype', 'oiftype', 'skuid', 'skgid', 'nftrace', 'rtclassid', 'ibrname', 'obrname', 'cpu', 'iifgroup', 'oifgroup', 'cgroup', 'random']);
/** Meta keys nft prints without `meta`. */
const PRINT_BARE_META: ReadonlySet<string> = new Set(['iifname', 'oifname', 'iif', 'oif', 'iifgroup', 'oifgroup']);

/** Header fields, with their types (`nft describe PROTO FIELD`). */
const PAYLOAD: Readonly<Record<string, Readonly<Record<string, DataType>>>> = {
  ip: {
    version: 'u8', hdrlength: 'u8', dscp: 'dscp', ecn: 'ecn', length: 'u16', id: 'u16', 'frag-off': 'u16', ttl: 'u8',
    protocol: 'inet_proto', checksum: 'u16', saddr: 'ipv4_addr', daddr: 'ipv4_addr',
  },
  tcp: {
    sport: 'inet_service', dport: 'inet_service', sequence: 'integer', ackseq: 'integer', doff: 'u8', reserved: 'u8',
    flags: 'tcp_flag', window: 'u16', checksum: 'u16', urgptr: 'u16',
  },
  udp: { sport: 'inet_service', dport: 'inet_service', length: 'u16', checksum: 'u16' },
  udplite: { sport: 'inet_service', dport: 'inet_service', checksum: 'u16' },
  sctp: { sport: 'inet_service', dport: 'inet_service', vtag: 'integer', checksum: 'integer' },
  dccp: { sport: 'inet_service', dport: 'inet_service' },
  th: { sport: 'inet_service', dport: 'inet_service' },
  icmp: { type: 'icmp_type', code: 'icmp_code', checksum: 'u16', id: 'u16', sequence: 'u16', gateway: 'ipv4_addr', mtu: 'u16' },
  ah: { nexthdr: 'inet_proto', hdrlength: 'u8', reserved: 'u16', spi: 'integer', sequence: 'integer' },
  esp: { spi: 'integer', sequence: 'integer' },
  comp: { nexthdr: 'inet_proto', flags: 'u8', cpi: 'u16' },
};

/** Transport headers: a rule may match on one of them only. */
const TRANSPORT: ReadonlySet<string> = new Set(['tcp', 'udp', 'udplite', 'sctp', 'dccp', 'icmp', 'ah', 'esp', 'comp']);
/** Transport headers with ports at the offsets `th` reads. */
const PORTED: ReadonlySet<string> = new Set(['tcp', 'udp', 'udplite', 'sctp', 'dccp']);
const TRANSPORT_BY_NUMBER: ReadonlyMap<number, string> = new Map([[6, 'tcp'], [17, 'udp'], [136, 'udplite'], [132, 'sctp'], [33, 'dccp'], [1, 'icmp'], [51, 'ah'], [50, 'esp'], [108, 'comp']]);

/** Headers netsim does not model, and why (said in the error). */
const NOT_MODELLED: Readonly<Record<string, string>> = {
  ip6: 'IPv4 only', icmpv6: 'IPv4 only', hbh: 'IPv4 only', rt0: 'IPv4 only', rt2: 'IPv4 only', srh: 'IPv4 only', frag: 'IPv4 only', dst: 'IPv4 only', mh: 'IPv4 only',
  ether: 'no link layer', vlan: 'no link layer', arp: 'no link layer',
};

/** Byte units of `limit` and `quota`. */
const BYTE_UNITS: Readonly<Record<string, number>> = { bytes: 1, kbytes: 1024, mbytes: 1024 * 1024 };

/** Conntrack keys without a direction, with their types (`nft describe ct KEY`). */
const CT_KEYS: Readonly<Record<string, DataType>> = {
  state: 'ct_state', status: 'ct_status', mark: 'mark', direction: 'ct_dir', expiration: 'time', helper: 'ifname',
  l3proto: 'nf_proto', protocol: 'inet_proto', zone: 'u16', bytes: 'u64', packets: 'u64', avgpkt: 'u64', id: 'integer',
};
/** Conntrack keys after `ct original|reply`. */
const CT_DIR_KEYS: Readonly<Record<string, DataType>> = {
  'ip saddr': 'ipv4_addr', 'ip daddr': 'ipv4_addr', 'proto-src': 'inet_service', 'proto-dst': 'inet_service',
  bytes: 'u64', packets: 'u64', avgpkt: 'u64', zone: 'u16', l3proto: 'nf_proto', protocol: 'inet_proto',
};

/** TCP options and their fields (`tcp option NAME FIELD`). */
const TCP_OPTIONS: Readonly<Record<string, Readonly<Record<string, DataType>>>> = {
  eol: { kind: 'u8' }, nop: { kind: 'u8' }, maxseg: { kind: 'u8', length: 'u8', size: 'u16' }, window: { kind: 'u8', length: 'u8', count: 'u8' },
  'sack-perm': { kind: 'u8', length: 'u8' }, sack: { kind: 'u8', length: 'u8', left: 'integer', right: 'integer' },
  timestamp: { kind: 'u8', length: 'u8', tsval: 'integer', tsecr: 'integer' }, mptcp: { kind: 'u8', length: 'u8', subtype: 'u8' },
};

interface Defines {
  readonly [name: string]: readonly Token[] | undefined;
}

export interface ParseOptions {
  readonly version?: NftVersion;
}

/** Parses an `nft -f` input. Syntax errors are collected (at most one per rule) rather than thrown. */
export function parse(text: string, opts: ParseOptions = {}): ParseResult {
  const lexer = new Lexer(text);
  const toks = new TokenStream(lexer);
  const result = new Parser(toks, opts.version ?? '1.0.6').run();
  const lineMap = lexer.lineMap;
  return lineMap === undefined ? result : { ...result, lineMap };
}

/**
 * The tokens the parser looks at, cut on demand: indexes are absolute, tokens behind the parser
 * are dropped as it moves on (it never looks back), past the end every index is the `eof` token.
 */
class TokenStream {
  private buf: Token[] = [];
  /** The absolute index of `buf[0]`. */
  private base = 0;
  private eof: Token | undefined;
  first: Token | undefined;

  constructor(private readonly lexer: Lexer) {}

  at(i: number): Token {
    const k = i - this.base;
    while (k >= this.buf.length) {
      if (this.eof !== undefined) return this.eof;
      const t = this.lexer.next();
      if (t.kind === 'eof') this.eof = t;
      this.first ??= t;
      this.buf.push(t);
    }
    return this.buf[k] as Token;
  }

  slice(from: number, to: number): Token[] {
    const out: Token[] = [];
    for (let i = from; i < to; i++) out.push(this.at(i));
    return out;
  }

  /** Forgets the tokens before `pos` (every so often, so that dropping them costs little). */
  release(pos: number): void {
    const k = pos - this.base;
    if (k < 512 || k > this.buf.length) return;
    this.buf = this.buf.slice(k);
    this.base = pos;
  }
}

/** A set or map declaration as its block is read. */
interface SetDeclDraft {
  keyType?: DataType[];
  keyTypeof?: string;
  dataType?: DataType[];
  dataTypeof?: string;
  typeSpan?: Span;
  flags: SetFlag[];
  timeoutMs?: number;
  gcIntervalMs?: number;
  size?: number;
  counter: boolean;
  comment?: string;
  policy?: 'performance' | 'memory';
  autoMerge?: boolean;
  elements?: RawElement[];
}

class Parser {
  private pos = 0;
  private readonly out: Command[] = [];
  private readonly diags: Diagnostic[] = [];
  private readonly defines: Record<string, readonly Token[]> = {};
  /** Expansion stack of `$var` tokens being read. */
  private pending: Token[] = [];

  constructor(
    private readonly toks: TokenStream,
    private readonly version: NftVersion,
  ) {}

  run(): ParseResult {
    try {
      for (;;) {
        const t = this.peek();
        if (t.kind === 'eof') break;
        if (this.isSep(t)) {
          this.next();
          continue;
        }
        try {
          this.topLevel();
        } catch (e) {
          if (!(e instanceof SyntaxError_)) throw e;
          this.recover(e);
        }
      }
    } catch (e) {
      if (e instanceof LocatedError) this.diags.push({ code: e.code, span: e.span, message: e.message, ...(e.related !== undefined && { related: e.related }) });
      else if (!(e instanceof ParseAbort)) throw e;
    }
    return { commands: this.out, diagnostics: this.diags };
  }

  /**
   * bison's one error rule, `common_block: error stmt_separator`, which every block (table, chain,
   * set, map, object) and the top level accept: after a syntax error the innermost open block
   * drops every token through the next newline or semicolon (closing braces included) and reads
   * on. The error's own token ends the recovery when it is a separator. The input ending first,
   * or a tenth error, stops the parse (bison's YYABORT): what was read before stays.
   */
  private recover(e: SyntaxError_): void {
    this.diags.push({ code: e.code, span: e.span, message: e.message });
    if (this.diags.length >= 10 || e.token.kind === 'eof') throw new ParseAbort();
    if (this.isSep(e.token)) {
      // Consumed already, or next.
      if ((this.pending[0] ?? this.toks.at(this.pos)) === e.token) this.next();
      return;
    }
    for (;;) {
      let t: Token;
      if (this.pending.length > 0) t = this.pending.shift() as Token;
      else {
        t = this.toks.at(this.pos);
        if (t.kind === 'eof') throw new ParseAbort();
        this.toks.release(++this.pos);
      }
      if (this.isSep(t)) return;
    }
  }

  /**
   * After the closing brace of a chain, set, map or object block: inside a table block the item
   * must end there (a separator), and bison, wanting one, has not yet left the block: an error
   * there is recovered inside the block just closed, which then needs another `}`. Returns whether
   * the block is done.
   */
  private closed(inTable: boolean): boolean {
    const t = this.peek();
    if (!inTable || this.isSep(t)) return true;
    this.blockItem(() => {
      throw syntax(t, 'newline or semicolon');
    });
    return false;
  }

  /** Runs one item of a block, recovering from a syntax error in it as bison does ({@link recover}). */
  private blockItem(item: () => void): void {
    try {
      item();
    } catch (e) {
      if (!(e instanceof SyntaxError_)) throw e;
      if (e instanceof BlockActionError && !e.popped) {
        e.popped = true;
        throw e;
      }
      this.recover(e);
    }
  }

  // ---- token access, with `$var` expansion

  private peek(k = 0): Token {
    // The common case: no expanded variable pending and no variable in sight.
    if (this.pending.length === 0) {
      let clean = true;
      for (let i = 0; i <= k; i++) {
        if (this.toks.at(this.pos + i).kind === 'var') {
          clean = false;
          break;
        }
      }
      if (clean) return this.toks.at(this.pos + k);
    }
    this.fill(k);
    return k < this.pending.length ? (this.pending[k] as Token) : this.toks.at(this.pos + k - this.pending.length);
  }

  private fill(k: number): void {
    // Expand variables lazily: a var at the front of what we look at is replaced by its tokens.
    for (let i = 0; i <= k; i++) {
      const t = i < this.pending.length ? this.pending[i] : this.toks.at(this.pos + i - this.pending.length);
      if (t?.kind !== 'var') continue;
      const def = (this.defines as Defines)[t.text];
      if (def === undefined) {
        // nft's action queues the error and calls YYERROR: recovered like a syntax error.
        const near = closest(t.text, Object.keys(this.defines).map((n) => [n, n] as const));
        const msg = `unknown identifier '${t.text}'${near !== undefined ? `; did you mean identifier \u2018${near}\u2019?` : ''}`;
        if (i >= this.pending.length) this.pos += i - this.pending.length + 1;
        else this.pending.splice(0, i + 1);
        throw new SyntaxError_(msg, { line: t.line, col: t.col + 1, endCol: t.endCol }, t);
      }
      if (i < this.pending.length) this.pending.splice(i, 1, ...def);
      else {
        const before = this.toks.slice(this.pos, this.pos + i - this.pending.length);
        this.pos += i - this.pending.length + 1;
        this.pending.push(...before, ...def);
      }
      i--;
    }
  }

  private next(): Token {
    const t = this.peek();
    if (this.pending.length > 0) this.pending.shift();
    else this.toks.release(++this.pos);
    this.lastTok = t;
    return t;
  }

  private isSep(t: Token): boolean {
    return t.kind === 'newline' || (t.kind === 'punct' && t.text === ';');
  }

  private isWord(t: Token, w?: string): boolean {
    return t.kind === 'word' && (w === undefined || t.text === w);
  }

  private isPunct(t: Token, p: string): boolean {
    return t.kind === 'punct' && t.text === p;
  }

  private expectWord(w: string, expecting?: string): Token {
    const t = this.next();
    if (!this.isWord(t, w)) throw syntax(t, expecting);
    return t;
  }

  private expectPunct(p: string, expecting?: string): Token {
    const t = this.next();
    if (!this.isPunct(t, p)) throw syntax(t, expecting);
    return t;
  }

  /** A table, chain, set, map or object name: a bare word that is not one of the scanner's keywords (nft 1.0.6 refuses quoted names). */
  private identifier(): Named {
    const t = this.next();
    if (t.kind !== 'word' || GLOBAL_KEYWORDS.has(t.text)) throw syntax(t, 'string');
    return { name: t.text, span: tokSpan(t) };
  }

  private number(): { n: number; tok: Token } {
    const t = this.next();
    const n = t.kind === 'number' ? parseNumber(t.text) : undefined;
    if (n === undefined) throw syntax(t, 'number');
    return { n, tok: t };
  }

  private endOfCommand(expecting?: string): void {
    const t = this.peek();
    if (t.kind === 'eof' || this.isSep(t)) {
      if (t.kind !== 'eof') this.next();
      return;
    }
    throw syntax(t, expecting);
  }

  private skipLine(): void {
    // Error recovery: drop the rest of the line, as bison's `error stmt_separator` rules do.
    for (;;) {
      const t = this.peek();
      if (t.kind === 'eof') return;
      if (this.isSep(t)) return;
      if (this.isPunct(t, '}')) return;
      this.next();
    }
  }

  // ---- top level

  private topLevel(): void {
    const t = this.next();
    if (t.kind !== 'word') throw syntax(t);
    switch (t.text) {
      case 'define': {
        const name = this.next();
        if (name.kind !== 'word') throw syntax(name, 'string');
        this.expectPunct('=');
        const value: Token[] = [];
        while (!this.isSep(this.peek()) && this.peek().kind !== 'eof') value.push(this.next());
        if (this.defines[name.text] !== undefined) {
          // nft's action queues the error and calls YYERROR after the separator: the next line goes too.
          if (this.isSep(this.peek())) this.next();
          throw new SyntaxError_(`redefinition of symbol '${name.text}'`, tokSpan(name), name);
        }
        this.defines[name.text] = value;
        return;
      }
      case 'table':
        return this.tableCmd('add', t);
      case 'chain':
        return this.chainCmd('add', t);
      case 'rule':
        return this.ruleCmd('add', t);
      case 'add':
      case 'create': {
        const what = this.next();
        if (!this.isWord(what)) throw syntax(what);
        switch (what.text) {
          case 'table':
            return this.tableCmd(t.text, t);
          case 'chain':
            return this.chainCmd(t.text, t);
          case 'rule':
            if (t.text === 'create') throw syntax(what);
            return this.ruleCmd('add', t);
          case 'set':
          case 'map':
            return this.setCmd(t.text, what.text === 'map', t);
          case 'element':
            return this.elementCmd(t.text, t);
          case 'counter':
          case 'quota':
          case 'limit':
            return this.objectCmd(t.text, what.text, t);
          case 'ct':
            this.expectWord('helper');
            return this.objectCmd(t.text, 'ct helper', t);
          default:
            throw syntax(what);
        }
      }
      case 'insert':
      case 'replace': {
        this.expectWord('rule');
        return this.ruleCmd(t.text, t);
      }
      case 'delete':
        return this.deleteCmd('delete', t);
      case 'destroy':
        if (this.version === '1.0.6') throw syntax(this.peek(), 'string');
        return this.deleteCmd('destroy', t);
      case 'flush':
        return this.flushCmd(t);
      case 'include': {
        // nft underlines the whole statement; it looks relative names up in its include
        // directories, which netsim does not have.
        const f = this.peek();
        if (f.kind === 'string') this.next();
        const span = f.kind === 'string' ? this.cmdSpan(t) : tokSpan(t);
        throw new LocatedError(`include is not supported by netsim: pass the files in order instead${f.kind === 'string' ? ` (${f.text})` : ''}`, span, undefined, 'unsupported');
      }
      case 'list':
      case 'reset':
      case 'monitor':
      case 'describe':
      case 'export':
      case 'import':
        throw new LocatedError(`"${t.text}" commands are not supported in netsim's nft -f input`, tokSpan(t), undefined, 'unsupported');
      default:
        // bison's `add_cmd: rule_position rule` with the `add` left out: `[FAMILY] TABLE CHAIN
        // STATEMENTS` adds a rule (so a misspelt command word is read as a table name).
        if (t.text === 'ip' || t.text === 'inet' || !GLOBAL_KEYWORDS.has(t.text)) {
          this.pending.unshift(t);
          return this.ruleCmd('add', t);
        }
        throw syntax(t);
    }
  }

  private family(): Family {
    const t = this.peek();
    if (t.kind === 'word' && (t.text === 'ip' || t.text === 'inet')) {
      this.next();
      return t.text;
    }
    if (t.kind === 'word' && ['ip6', 'arp', 'bridge', 'netdev'].includes(t.text) && this.peek(1).kind === 'word') {
      throw new LocatedError(`family ${t.text} is not modelled by netsim (IPv4 only: use ip or inet)`, tokSpan(t), undefined, 'unsupported');
    }
    return 'ip';
  }

  private span(from: Token, to: Token): Span {
    return { line: from.line, col: from.col, endCol: to.line === from.line ? to.endCol : from.endCol };
  }

  private lastTok: Token | undefined;
  /** How many element lists (`{ … }`) are open. */
  private braces = 0;
  /** The transport protocol the rule has fixed so far (a header match, or `ip protocol`/`meta l4proto` of one value). */
  private l4: { readonly protos: readonly string[]; readonly span: Span; readonly header?: boolean } | undefined;
  /** The protocol `th` ports are read as: the latest header or single-protocol match. */
  private thProto: string | undefined;
  /** The first evaluation error of the rule being read (nft reports it after parsing). */
  private deferred: LocatedError | undefined;
  /** The protocols of the last `{ … }` of protocol numbers, in the order written. */
  private lastProtoSet: number[] | undefined;

  private lastBefore(): Token {
    // The token just consumed (for spans ending a command).
    return this.lastTok ?? this.toks.first ?? this.toks.at(0);
  }

  /** A top-level command's range: nft's runs through the separator that ends it. */
  private cmdSpan(start: Token): Span {
    const last = this.lastBefore();
    const sep = this.peek();
    const end = this.isSep(sep) && sep.line === start.line ? sep.col : last.endCol;
    return { line: start.line, col: start.col, endCol: start.line === last.line ? end : start.endCol };
  }

  private tableCmd(op: 'add' | 'create', start: Token): void {
    const family = this.family();
    const name = this.identifier();
    const cmd: { comment?: string; dormant?: boolean } = {};
    const sub: Command[] = [];
    const chains: Command[] = [];
    const sets: Command[] = [];
    const objs: Command[] = [];
    const rules: Command[] = [];
    const opened = this.isPunct(this.peek(), '{');
    if (opened) {
      this.next();
      for (;;) {
        const t = this.peek();
        if (this.isSep(t)) {
          this.next();
          continue;
        }
        if (this.isPunct(t, '}')) {
          this.next();
          break;
        }
        this.next();
        this.blockItem(() => this.tableItem(t, family, name, cmd, chains, rules, objs, sets));
      }
    }
    const table: Command = { kind: 'table', op, family, name, ...cmd, span: this.span(start, this.lastBefore()) };
    // `table NAME` without a block is a whole command: the grammar then wants its end.
    this.endOfCommand('end of file or newline or semicolon');
    this.out.push(table, ...sub, ...chains, ...objs, ...sets, ...rules);
  }

  /** One item of a table block (after its first word, `t`). */
  private tableItem(t: Token, family: Family, name: Named, cmd: { comment?: string; dormant?: boolean }, chains: Command[], rules: Command[], objs: Command[], sets: Command[]): void {
    {
      {
        if (this.isWord(t, 'comment')) {
          const s = this.next();
          if (s.kind !== 'string') throw syntax(s, 'quoted string');
          cmd.comment = s.text;
          this.blockItemEnd();
        } else if (this.isWord(t, 'flags')) {
          const f = this.identifier();
          if (f.name !== 'dormant') throw new LocatedError(`unknown table option ${f.name}`, f.span);
          cmd.dormant = true;
          this.blockItemEnd();
        } else if (this.isWord(t, 'chain')) {
          const cname = this.identifier();
          const { chain, body } = this.chainBlock(family, name, cname, t, true);
          chains.push(chain);
          rules.push(...body);
          this.blockItemEnd();
        } else if (this.isWord(t, 'counter') || this.isWord(t, 'quota') || this.isWord(t, 'limit') || (this.isWord(t, 'ct') && this.isWord(this.peek(), 'helper'))) {
          if (this.isWord(t, 'ct')) this.next();
          const kind = t.text === 'ct' ? 'ct helper' : (t.text as 'counter');
          const oname = this.identifier();
          const obj = this.objectBlock(kind, family, oname, true);
          objs.push({ kind: 'object', op: 'add', family, table: name, name: oname, obj, span: oname.span });
          this.blockItemEnd();
        } else if (this.isWord(t, 'flowtable') || (this.isWord(t, 'ct') && (this.isWord(this.peek(), 'timeout') || this.isWord(this.peek(), 'expectation')))) {
          throw new LocatedError(`${t.text === 'ct' ? `ct ${this.peek().text}` : 'flowtable'} objects are not modelled by netsim`, tokSpan(t), undefined, 'unsupported');
        } else if (this.isWord(t, 'set') || this.isWord(t, 'map')) {
          const sname = this.identifier();
          this.expectPunct('{');
          const decl = this.setBlock(t.text === 'map', true);
          sets.push({ kind: 'set', op: 'add', family, table: name, name: sname, decl, span: sname.span });
          this.blockItemEnd();
        } else throw syntax(t);
      }
    }
  }

  private blockItemEnd(): void {
    const t = this.peek();
    if (this.isSep(t)) return;
    throw syntax(t, 'newline or semicolon');
  }

  /** `{ type … hook … priority …; policy …; comment "…"; rules }` */
  private chainBlock(family: Family, table: Named, name: Named, start: Token, inTable = false): { chain: Command; body: Command[] } {
    this.expectPunct('{', "'{'");
    let base: BaseSpecParsed | undefined;
    let policy: 'accept' | 'drop' | undefined;
    let policySpan: Span | undefined;
    let comment: string | undefined;
    const body: Command[] = [];
    for (;;) {
      const t = this.peek();
      if (this.isSep(t)) {
        this.next();
        continue;
      }
      if (this.isPunct(t, '}')) {
        this.next();
        if (this.closed(inTable)) break;
        continue;
      }
      this.blockItem(() => {
        if (this.isWord(t, 'type') && !this.isPunct(this.peek(1), '.')) {
          this.next();
          try {
            base = this.baseSpec(family);
          } catch (e) {
            // A priority nft cannot place is reported while reading, and the rest is read on.
            if (!(e instanceof LocatedError) || e.code !== 'eval' || e instanceof SyntaxError_) throw e;
            this.diags.push({ code: e.code, span: e.span, message: e.message });
            if (this.diags.length >= 10) throw new ParseAbort();
            this.skipLine();
          }
          return;
        }
        if (this.isWord(t, 'policy')) {
          this.next();
          const p = this.next();
          if (!this.isWord(p, 'accept') && !this.isWord(p, 'drop')) throw syntax(p, "accept or drop or '$'");
          policy = p.text as 'accept' | 'drop';
          policySpan = this.span(t, p);
          this.endStmt();
          return;
        }
        if (this.isWord(t, 'comment') && this.peek(1).kind === 'string') {
          this.next();
          const c = this.next();
          const dup = comment !== undefined;
          comment = c.text;
          this.endStmt();
          if (dup) throw new BlockActionError('You can only specify this once. This statement is duplicated.', this.span(t, c), c);
          return;
        }
        const rb = this.ruleBody(family);
        body.push({ kind: 'rule', op: 'add', family, table, chain: name, body: rb, span: rb.stmtSpan ?? rb.span });
      });
    }
    const chain: Command = {
      kind: 'chain',
      op: 'add',
      family,
      table,
      name,
      ...(base !== undefined && { base }),
      ...(policy !== undefined && { policy }),
      ...(policySpan !== undefined && { policySpan }),
      ...(comment !== undefined && { comment }),
      span: this.span(start, this.lastBefore()),
    };
    return { chain, body };
  }

  private endStmt(): void {
    const t = this.peek();
    if (this.isSep(t)) {
      this.next();
      return;
    }
    if (this.isPunct(t, '}')) return;
    throw syntax(t);
  }

  private baseSpec(_family: Family): BaseSpecParsed {
    const type = this.next();
    if (!this.isWord(type) || !['filter', 'nat', 'route'].includes(type.text)) {
      throw new LocatedError(`unknown chain type`, tokSpan(type));
    }
    this.expectWord('hook');
    const hook = this.next();
    if (!this.isWord(hook)) throw syntax(hook);
    if (!HOOKS.has(hook.text)) throw new LocatedError(`unknown chain hook`, tokSpan(hook));
    const prioTok = this.expectWord('priority', 'priority');
    const first = this.next();
    let prio: number;
    let last = first;
    if (first.kind === 'number') prio = Number(first.text);
    else if (this.isPunct(first, '-') && this.peek().kind === 'number') {
      last = this.next();
      prio = -Number(last.text);
    } else if (first.kind === 'word') {
      const std = STD_PRIO[first.text];
      let off = 0;
      if ((this.isPunct(this.peek(), '+') || this.isPunct(this.peek(), '-')) && this.peek(1).kind === 'number') {
        const sign = this.next().text === '+' ? 1 : -1;
        last = this.next();
        off = sign * Number(last.text);
      }
      const spanP = { line: prioTok.line, col: prioTok.col, endCol: last.endCol };
      if (std === undefined || !prioNameAllowed(first.text, hook.text as Hook, type.text as ChainType)) {
        throw new LocatedError('invalid priority expression value in this context.', spanP);
      }
      prio = std + off;
    } else throw syntax(first);
    // The semicolon after the priority may be a newline.
    const sep = this.next();
    if (!this.isPunct(sep, ';') && sep.kind !== 'newline') throw syntax(sep, 'newline or semicolon');
    let policy: 'accept' | 'drop' | undefined;
    if (this.isWord(this.peek(), 'policy')) {
      this.next();
      const p = this.next();
      if (!this.isWord(p, 'accept') && !this.isWord(p, 'drop')) throw syntax(p, "accept or drop or '$'");
      policy = p.text as 'accept' | 'drop';
      this.endStmt();
    }
    return {
      type: type.text as ChainType,
      typeSpan: tokSpan(type),
      hook: hook.text as Hook,
      hookSpan: tokSpan(hook),
      priority: prio,
      prioSpan: { line: prioTok.line, col: prioTok.col, endCol: last.endCol },
      ...(policy !== undefined && { policy }),
    };
  }

  private setBlock(isMap: boolean, inTable = false): SetDecl {
    const d: SetDeclDraft = { flags: [], counter: false };
    for (;;) {
      const first = this.peek();
      if (this.isSep(first)) {
        this.next();
        continue;
      }
      if (this.isPunct(first, '}')) {
        this.next();
        if (this.closed(inTable)) break;
        continue;
      }
      this.blockItem(() => this.setItem(isMap, d));
    }
    return { isMap, ...d };
  }

  /** One item of a set or map block. */
  private setItem(isMap: boolean, d: SetDeclDraft): void {
    {
      const t = this.next();
      if (!this.isWord(t)) throw syntax(t);
      switch (t.text) {
        case 'type': {
          let list: ReturnType<Parser['typeList']>;
          try {
            list = this.typeList(isMap);
          } catch (e) {
            // nft reports an unknown type name and reads on: the set then has no key, which its
            // evaluation reports too.
            if (!(e instanceof LocatedError) || e.code !== 'eval' || e instanceof SyntaxError_) throw e;
            this.diags.push({ code: e.code, span: e.span, message: e.message });
            if (this.diags.length >= 10) throw new ParseAbort();
            this.skipLine();
            break;
          }
          const { types, data } = list;
          d.keyType = types;
          if (data !== undefined) d.dataType = data;
          d.typeSpan = tokSpan(t);
          break;
        }
        case 'typeof': {
          const key = this.typeofExpr();
          d.keyType = key.types;
          d.keyTypeof = key.text;
          if (isMap) {
            this.expectPunct(':');
            if (this.isWord(this.peek(), 'verdict')) {
              this.next();
              d.dataType = ['verdict'];
            } else {
              const data = this.typeofExpr();
              d.dataType = data.types;
              d.dataTypeof = data.text;
            }
          }
          d.typeSpan = tokSpan(t);
          break;
        }
        case 'flags': {
          for (;;) {
            const f = this.next();
            if (!this.isWord(f) || !['constant', 'interval', 'timeout', 'dynamic'].includes(f.text)) throw syntax(f, 'constant or interval or dynamic or timeout');
            if (!d.flags.includes(f.text as SetFlag)) d.flags.push(f.text as SetFlag);
            if (!this.isPunct(this.peek(), ',')) break;
            this.next();
          }
          break;
        }
        case 'timeout':
          d.timeoutMs = this.time();
          break;
        case 'gc-interval':
          d.gcIntervalMs = this.time();
          break;
        case 'size':
          d.size = this.number().n;
          break;
        case 'counter':
          d.counter = true;
          break;
        case 'comment': {
          const s = this.next();
          if (s.kind !== 'string') throw syntax(s, 'quoted string');
          d.comment = s.text;
          break;
        }
        case 'policy': {
          const p = this.next();
          if (!this.isWord(p, 'performance') && !this.isWord(p, 'memory')) throw syntax(p);
          d.policy = p.text as 'performance' | 'memory';
          break;
        }
        case 'auto-merge':
          d.autoMerge = true;
          break;
        case 'elements': {
          this.expectPunct('=');
          this.expectPunct('{');
          d.elements = this.rawElements(isMap);
          break;
        }
        default:
          throw syntax(t);
      }
      this.endStmt();
    }
  }

  private typeList(isMap: boolean): { types: DataType[]; data?: DataType[] } {
    const read = (): DataType[] => {
      const out: DataType[] = [];
      for (;;) {
        const t = this.next();
        if (!this.isWord(t)) throw syntax(t);
        if (t.text === 'ipv6_addr') throw new LocatedError('ipv6_addr is not modelled by netsim (IPv4 only)', tokSpan(t), undefined, 'unsupported');
        if (!SET_TYPE_NAMES.has(t.text)) throw new LocatedError(`unknown datatype ${t.text}`, tokSpan(t));
        out.push(t.text as DataType);
        if (!this.isPunct(this.peek(), '.')) break;
        this.next();
      }
      return out;
    };
    const types = read();
    if (isMap) {
      this.expectPunct(':', 'colon or .');
      return { types, data: read() };
    }
    if (this.isPunct(this.peek(), ':')) throw syntax(this.next(), 'newline or semicolon or .');
    return { types };
  }

  private typeofExpr(): { types: DataType[]; text: string } {
    const e = this.lhs('ip');
    const parts = e.kind === 'concat' ? e.parts : [e];
    return { types: parts.map((p) => p.type), text: parts.map(exprText).join(' . ') };
  }

  private time(): number {
    const t = this.next();
    const ms = parseTime(t.text);
    if (ms === undefined || (t.kind !== 'word' && t.kind !== 'number')) throw syntax(t);
    return ms;
  }

  /** Elements after `{`, through the closing `}`. */
  private rawElements(isMap: boolean): RawElement[] {
    this.braces++;
    try {
      return this.rawElementsIn(isMap);
    } finally {
      this.braces--;
    }
  }

  private rawElementsIn(isMap: boolean): RawElement[] {
    const out: RawElement[] = [];
    for (;;) {
      let t = this.peek();
      while (t.kind === 'newline') {
        this.next();
        t = this.peek();
      }
      if (this.isPunct(t, '}')) {
        this.next();
        return out;
      }
      if (this.isPunct(t, '{')) {
        // A set variable inside a set: its elements join this one.
        this.next();
        out.push(...this.rawElements(isMap));
      } else out.push(this.rawElement(isMap));
      while (this.peek().kind === 'newline') this.next();
      const sep = this.next();
      if (this.isPunct(sep, '}')) return out;
      if (!this.isPunct(sep, ',')) throw syntax(sep, 'comma or \'}\'');
    }
  }

  private rawElement(isMap: boolean): RawElement {
    const first = this.peek();
    const key = this.rawConcat();
    const keySpan = this.span(first, this.lastBefore());
    let timeoutMs: number | undefined;
    let comment: string | undefined;
    let counter: { packets: number; bytes: number } | undefined;
    for (;;) {
      const t = this.peek();
      if (this.isWord(t, 'timeout')) {
        this.next();
        timeoutMs = this.time();
      } else if (this.isWord(t, 'expires')) {
        this.next();
        this.time();
      } else if (this.isWord(t, 'comment')) {
        this.next();
        const s = this.next();
        if (s.kind !== 'string') throw syntax(s, 'quoted string');
        comment = s.text;
      } else if (this.isWord(t, 'counter')) {
        this.next();
        counter = this.counterArgs();
      } else break;
    }
    let data: RawData | undefined;
    if (isMap || this.isPunct(this.peek(), ':')) {
      this.expectPunct(':', 'colon');
      data = this.rawData();
    }
    const end = this.lastBefore();
    return {
      key,
      keySpan,
      ...(data !== undefined && { data }),
      ...(timeoutMs !== undefined && { timeoutMs }),
      ...(comment !== undefined && { comment }),
      ...(counter !== undefined && { counter }),
      span: this.span(first, end),
    };
  }

  private rawData(): RawData {
    const t = this.peek();
    if (this.isWord(t) && ['accept', 'drop', 'continue', 'return'].includes(t.text)) {
      this.next();
      return { kind: 'verdict', verdict: t.text as 'accept' };
    }
    if (this.isWord(t, 'jump') || this.isWord(t, 'goto')) {
      this.next();
      return { kind: 'verdict', verdict: t.text as 'jump', chain: this.identifier() };
    }
    return { kind: 'values', parts: this.rawConcat() };
  }

  private rawConcat(): RawAtom[] {
    const parts = [this.rawAtom()];
    while (this.isPunct(this.peek(), '.')) {
      this.next();
      parts.push(this.rawAtom());
    }
    return parts;
  }

  private rawAtom(): RawAtom {
    const t = this.next();
    if (t.kind !== 'word' && t.kind !== 'number' && t.kind !== 'addr' && t.kind !== 'string') throw syntax(t);
    const n = this.peek();
    if (this.isPunct(n, '-') && t.kind !== 'string') {
      this.next();
      const hi = this.next();
      if ((hi.kind !== 'word' && hi.kind !== 'number' && hi.kind !== 'addr') || (hi.kind === 'word' && KEYWORDS.has(hi.text))) throw syntax(hi);
      return { kind: 'range', lo: t, hi, span: this.span(t, hi) };
    }
    if (this.isPunct(n, '/') && t.kind === 'addr') {
      this.next();
      const len = this.next();
      if (len.kind !== 'number') {
        // Inside braces bison wants the number; after a match it has read a word there as a
        // value and wants a list's comma next.
        if (this.braces > 0) throw syntax(len, 'number');
        if (len.kind === 'word') throw syntax(this.next(), 'comma');
        throw syntax(len);
      }
      const l = Number(len.text);
      if (l > 32) throw new LocatedError(`Prefix length ${l} is invalid for type of 32 bits width`, this.span(t, len));
      return { kind: 'prefix', addr: t, len: l, span: this.span(t, len) };
    }
    if (this.isPunct(n, ',') && t.kind === 'word' && this.isWord(this.peek(1))) {
      // `ct state established,related` style lists are handled by the caller (rhs), not in sets.
    }
    return { kind: 'atom', tok: t };
  }

  private counterArgs(): { packets: number; bytes: number } {
    let packets = 0;
    let bytes = 0;
    if (this.isWord(this.peek(), 'packets')) {
      this.next();
      packets = this.number().n;
      this.expectWord('bytes');
      bytes = this.number().n;
    }
    return { packets, bytes };
  }

  // ---- commands with explicit names

  private chainCmd(op: 'add' | 'create', start: Token): void {
    const family = this.family();
    const table = this.identifier();
    const name = this.identifier();
    if (this.isPunct(this.peek(), '{')) {
      const { chain, body } = this.chainBlock(family, table, name, start);
      this.out.push({ ...chain, op, span: name.span, errSpan: this.cmdSpan(start) } as Command, ...body);
    } else this.out.push({ kind: 'chain', op, family, table, name, span: name.span, errSpan: this.cmdSpan(start) });
    this.endOfCommand('end of file or newline or semicolon');
  }

  private ruleCmd(op: 'add' | 'insert' | 'replace', start: Token): void {
    const family = this.family();
    const table = this.identifier();
    const chain = this.identifier();
    let position: { kind: 'handle' | 'position' | 'index'; n: number; span: Span } | undefined;
    const p = this.peek();
    if (this.isWord(p, 'handle') || this.isWord(p, 'position') || this.isWord(p, 'index')) {
      this.next();
      const { n, tok } = this.number();
      position = { kind: p.text as 'handle', n, span: this.span(p, tok) };
    }
    if (op === 'replace' && position?.kind !== 'handle') throw syntax(this.peek(), 'handle');
    const body = this.ruleBody(family);
    this.out.push({ kind: 'rule', op, family, table, chain, ...(position !== undefined && { position }), body, span: this.cmdSpan(start) });
    this.endOfCommand();
  }

  private objectCmd(op: 'add' | 'create', kind: NftObject['kind'], start: Token): void {
    const family = this.family();
    const table = this.identifier();
    const name = this.identifier();
    const obj = this.isPunct(this.peek(), '{') || kind !== 'counter' ? this.objectBlock(kind, family, name) : { kind: 'counter' as const, name: name.name, packets: 0, bytes: 0 };
    this.out.push({ kind: 'object', op, family, table, name, obj, span: this.cmdSpan(start) });
    this.endOfCommand('end of file or newline or semicolon');
  }

  /** `{ … }` of a `counter`, `quota`, `limit` or `ct helper` declaration. */
  private objectBlock(kind: NftObject['kind'], family: Family, name: Named, inTable = false): DistributiveOmit<NftObject, 'handle'> {
    this.expectPunct('{');
    let comment: string | undefined;
    let packets = 0;
    let bytes = 0;
    let quota: Extract<Stmt, { kind: 'quota' }> | undefined;
    let limit: Extract<Stmt, { kind: 'limit' }> | undefined;
    let helper: string | undefined;
    let protocol: 'tcp' | 'udp' | undefined;
    let l3proto: 'ip' | 'inet' | 'ip6' | undefined;
    for (;;) {
      const t = this.peek();
      if (this.isSep(t)) {
        this.next();
        continue;
      }
      if (this.isPunct(t, '}')) {
        this.next();
        if (this.closed(inTable)) break;
        continue;
      }
      this.blockItem(() => {
        if (this.isWord(t, 'comment')) {
          this.next();
          const c = this.next();
          if (c.kind !== 'string') throw syntax(c, 'quoted string');
          comment = c.text;
        } else if (kind === 'counter' && this.isWord(t, 'packets')) {
          ({ packets, bytes } = this.counterArgs());
        } else if (kind === 'quota') {
          quota = this.quotaStmt() as Extract<Stmt, { kind: 'quota' }>;
        } else if (kind === 'limit') {
          limit = this.limitStmt() as Extract<Stmt, { kind: 'limit' }>;
        } else if (kind === 'ct helper' && this.isWord(t, 'type')) {
          this.next();
          const h = this.next();
          if (h.kind !== 'string') throw syntax(h, 'quoted string');
          helper = h.text;
          this.expectWord('protocol');
          const p = this.next();
          if (!this.isWord(p, 'tcp') && !this.isWord(p, 'udp')) throw syntax(p);
          protocol = p.text as 'tcp';
        } else if (kind === 'ct helper' && this.isWord(t, 'l3proto')) {
          this.next();
          const l = this.next();
          if (!this.isWord(l, 'ip') && !this.isWord(l, 'inet') && !this.isWord(l, 'ip6')) throw syntax(l);
          l3proto = l.text as 'ip';
        } else throw syntax(t);
        this.blockItemEnd2();
      });
    }
    const base = { name: name.name, ...(comment !== undefined && { comment }) };
    switch (kind) {
      case 'counter':
        return { ...base, kind, packets, bytes };
      case 'quota':
        if (quota === undefined) throw syntax(this.lastBefore());
        return { ...base, kind, over: quota.over, bytes: quota.bytes, used: quota.used };
      case 'limit':
        if (limit === undefined) throw syntax(this.lastBefore());
        return { ...base, kind, over: limit.over, rate: limit.rate, unit: limit.unit, burst: limit.burst, ...(limit.bytes === true && { bytes: true }) };
      case 'ct helper':
        if (helper === undefined || protocol === undefined) throw new LocatedError('ct helper needs a type', name.span);
        return { ...base, kind, helper, protocol, l3proto: l3proto ?? family };
    }
  }

  /** After an item of an object block: a separator or the closing brace. */
  private blockItemEnd2(): void {
    const t = this.peek();
    if (this.isSep(t) || this.isPunct(t, '}')) return;
    throw syntax(t, 'newline or semicolon');
  }

  private setCmd(op: 'add' | 'create', isMap: boolean, start: Token): void {
    const family = this.family();
    const table = this.identifier();
    const name = this.identifier();
    this.expectPunct('{');
    const decl = this.setBlock(isMap);
    this.out.push({ kind: 'set', op, family, table, name, decl, span: this.cmdSpan(start) });
    this.endOfCommand('end of file or newline or semicolon');
  }

  private elementCmd(op: 'add' | 'create' | 'delete' | 'destroy', start: Token): void {
    const family = this.family();
    const table = this.identifier();
    const set = this.identifier();
    this.expectPunct('{');
    // The set's type decides whether elements carry data; read data when a colon follows.
    const elements = this.rawElements(false);
    this.out.push({ kind: 'element', op, family, table, set, elements, span: this.cmdSpan(start) });
    this.endOfCommand();
  }

  private deleteCmd(op: 'delete' | 'destroy', start: Token): void {
    const what = this.next();
    if (!this.isWord(what)) throw syntax(what);
    if (what.text === 'element') return this.elementCmd(op, start);
    if (what.text === 'ct') this.expectWord('helper');
    const objKind = what.text === 'ct' ? 'ct helper' : what.text === 'counter' || what.text === 'quota' || what.text === 'limit' ? what.text : undefined;
    if (objKind === undefined && !['table', 'chain', 'set', 'map', 'rule'].includes(what.text)) throw syntax(what);
    const family = this.family();
    const w = objKind ?? (what.text as 'table' | 'chain' | 'set' | 'map' | 'rule');
    let table: Named;
    let name: Named | undefined;
    let handle: { n: number; span: Span } | undefined;
    if (w === 'table') {
      if (this.isWord(this.peek(), 'handle')) throw new LocatedError('delete by handle is not supported by netsim', tokSpan(this.peek()), undefined, 'unsupported');
      table = this.identifier();
    } else {
      table = this.identifier();
      if (w === 'rule') {
        name = this.identifier();
        this.expectWord('handle', 'handle');
        const { n, tok } = this.number();
        handle = { n, span: tokSpan(tok) };
      } else if (this.isWord(this.peek(), 'handle')) {
        throw new LocatedError('delete by handle is not supported by netsim', tokSpan(this.peek()), undefined, 'unsupported');
      } else name = this.identifier();
    }
    this.out.push({
      kind: 'delete',
      op,
      what: w,
      family,
      table,
      ...(name !== undefined && { name }),
      ...(handle !== undefined && { handle }),
      span: this.cmdSpan(start),
    });
    this.endOfCommand();
  }

  private flushCmd(start: Token): void {
    const what = this.next();
    if (!this.isWord(what)) throw syntax(what);
    switch (what.text) {
      case 'ruleset':
        if (this.isWord(this.peek(), 'ip') || this.isWord(this.peek(), 'inet')) this.next();
        this.out.push({ kind: 'flush', what: 'ruleset', span: this.span(start, what) });
        break;
      case 'table': {
        const family = this.family();
        const table = this.identifier();
        this.out.push({ kind: 'flush', what: 'table', family, table, span: this.span(start, this.lastBefore()) });
        break;
      }
      case 'chain':
      case 'set':
      case 'map': {
        const family = this.family();
        const table = this.identifier();
        const name = this.identifier();
        this.out.push({ kind: 'flush', what: what.text, family, table, name, span: this.span(start, this.lastBefore()) });
        break;
      }
      default:
        throw syntax(what);
    }
    this.endOfCommand();
  }

  // ---- rules

  private ruleBody(family: Family): RuleBody {
    const stmts: Stmt[] = [];
    const setRefs: Named[] = [];
    const targets: Named[] = [];
    let comment: string | undefined;
    const first = this.peek();
    const jumps: { chain: string; span: Span }[] = [];
    const objRefs: (Named & { readonly type: NftObject['kind'] })[] = [];
    const updateSpans: Span[] = [];
    const anonSpans: Span[] = [];
    const setMatches: RuleCtx['setMatches'] = [];
    const ctx: RuleCtx = { family, setRefs, setMatches, targets, jumps, objRefs, updateSpans, anonSpans };
    let beforeComment: Token | undefined;
    this.l4 = undefined;
    this.thProto = undefined;
    this.deferred = undefined;
    let terminal: Span | undefined;
    let afterTerminal: { span: Span; terminal: Span } | undefined;
    for (;;) {
      const t = this.peek();
      if (t.kind === 'eof' || this.isSep(t) || this.isPunct(t, '}')) break;
      if (this.isWord(t, 'comment')) {
        beforeComment ??= this.lastBefore();
        this.next();
        const s = this.next();
        if (s.kind !== 'string') throw syntax(s, 'string or quoted string or string with a trailing asterisk');
        comment = s.text;
        continue;
      }
      let st: Stmt;
      try {
        st = this.stmt(ctx, stmts);
      } catch (e) {
        // nft evaluates a rule only after reading the whole input: keep reading, report the first
        // evaluation error of the rule when the command is evaluated.
        if (!(e instanceof LocatedError) || e instanceof SyntaxError_ || e.code !== 'eval') throw e;
        this.deferred ??= e;
        continue;
      }
      const span = this.span(t, this.lastBefore());
      if (terminal !== undefined && afterTerminal === undefined) afterTerminal = { span, terminal };
      if (st.kind === 'verdict' || st.kind === 'vmap' || st.kind === 'reject') terminal ??= span;
      stmts.push(st);
    }
    const deferred = this.deferred;
    this.deferred = undefined;
    if (stmts.length === 0 && comment === undefined && deferred === undefined) throw syntax(this.peek());
    const last = this.lastBefore();
    const evalError = deferred !== undefined ? { message: deferred.message, span: deferred.span, ...(deferred.related !== undefined && { related: deferred.related }) } : afterTerminal !== undefined ? { message: 'Statement after terminal statement has no effect', span: afterTerminal.span, related: afterTerminal.terminal } : undefined;
    return {
      stmts: markDependencies(mergePayloads(icmpEchoDependency(resetDependency(stmts))), family),
      ...(comment !== undefined && { comment }),
      setRefs,
      targets,
      jumps,
      ...(objRefs.length > 0 && { objRefs }),
      ...(updateSpans.length > 0 && { updateSpans }),
      ...(anonSpans.length > 0 && { anonSpans }),
      ...(setMatches.length > 0 && { setMatches }),
      ...(evalError !== undefined && { evalError }),
      span: this.span(first, last),
      ...(beforeComment !== undefined && beforeComment !== first && { stmtSpan: this.span(first, beforeComment) }),
    };
  }

  private stmt(ctx: RuleCtx, before: readonly Stmt[]): Stmt {
    const t = this.peek();
    if (t.kind !== 'word') throw syntax(t);
    switch (t.text) {
      case 'accept':
      case 'drop':
      case 'continue':
      case 'return':
        this.next();
        return { kind: 'verdict', verdict: { kind: t.text } };
      case 'jump':
      case 'goto': {
        this.next();
        if (this.isSep(this.peek()) || this.peek().kind === 'eof') throw syntax(this.next(), "'{'");
        const c = this.identifier();
        ctx.targets.push(c);
        ctx.jumps.push({ chain: c.name, span: this.span(t, this.lastBefore()) });
        return { kind: 'verdict', verdict: { kind: t.text, chain: c.name } };
      }
      case 'queue':
        throw new LocatedError('queue is not supported by netsim (no userspace queue model)', tokSpan(t), undefined, 'unsupported');
      case 'counter':
      case 'quota':
      case 'limit':
        if (this.isWord(this.peek(1), 'name')) {
          this.next();
          this.next();
          const n = this.next();
          if (n.kind !== 'string' && n.kind !== 'word') throw syntax(n);
          ctx.objRefs.push({ type: t.text, name: n.text, span: tokSpan(n) });
          return { kind: 'objref', type: t.text, name: n.text };
        }
        if (t.text === 'quota') {
          this.next();
          return this.quotaStmt();
        }
        if (t.text === 'limit') {
          this.next();
          return this.limitStmt();
        }
        this.next();
        return { kind: 'counter', ...this.counterArgs() };
      case 'notrack':
        this.next();
        return { kind: 'notrack' };
      case 'log':
        this.next();
        return this.logStmt();

      case 'reject':
        this.next();
        return this.rejectStmt(ctx, before);
      case 'masquerade':
      case 'snat':
      case 'dnat':
      case 'redirect':
        this.next();
        return this.natStmt(t.text, ctx, before);
      case 'update':
      case 'add':
        if (this.isPunct(this.peek(1), '@')) {
          this.next();
          this.next();
          const name = this.identifier();
          ctx.setRefs.push(name);
          this.expectPunct('{');
          const key = this.lhs(ctx.family);
          let timeoutMs: number | undefined;
          if (this.isWord(this.peek(), 'timeout')) {
            this.next();
            timeoutMs = this.time();
          }
          this.expectPunct('}');
          ctx.updateSpans.push(this.span(t, this.lastBefore()));
          return { kind: 'set-update', op: t.text, set: name.name, key, ...(timeoutMs !== undefined && { timeoutMs }) };
        }
        throw syntax(t);
      case 'synproxy':
      case 'socket':
      case 'osf':
      case 'rt':
      case 'ipsec':
      case 'dup':
      case 'fwd':
      case 'tproxy':
        throw new LocatedError(`${t.text} is not modelled by netsim`, tokSpan(t), undefined, 'unsupported');
      default:
        if (!KEYWORDS.has(t.text) && !isExprStart(t.text) && t.text !== 'and') {
          // bison takes an unknown word as a symbol and fails on what follows it, unless a value
          // follows: then it is a comparison, which evaluation cannot type.
          this.next();
          const v = this.peek();
          if (v.kind === 'number' || v.kind === 'addr' || v.kind === 'string' || (v.kind === 'word' && !KEYWORDS.has(v.text))) {
            this.next();
            throw new LocatedError('No symbol type information', tokSpan(t));
          }
          throw syntax(v);
        }
        break;
    }
    // `meta mark set …`, `mark set …`, `ct mark set …`
    const isMetaSet = (this.isWord(t, 'meta') && this.isWord(this.peek(1), 'mark') && this.isWord(this.peek(2), 'set')) || (this.isWord(t, 'mark') && this.isWord(this.peek(1), 'set'));
    if (isMetaSet) {
      if (this.isWord(t, 'meta')) this.next();
      this.next();
      this.next();
      return { kind: 'meta-set', key: 'mark', source: this.source('mark', ctx) };
    }
    if (this.isWord(t, 'ct') && this.isWord(this.peek(1), 'helper') && this.isWord(this.peek(2), 'set')) {
      this.next();
      this.next();
      this.next();
      const n = this.next();
      if (n.kind !== 'string' && n.kind !== 'word') throw syntax(n);
      ctx.objRefs.push({ type: 'ct helper', name: n.text, span: tokSpan(n) });
      return { kind: 'objref', type: 'ct helper', name: n.text };
    }
    if (this.isWord(t, 'ct') && this.isWord(this.peek(1), 'count')) {
      this.next();
      this.next();
      let over = false;
      if (this.isWord(this.peek(), 'over')) {
        this.next();
        over = true;
      }
      return { kind: 'ct-count', over, count: this.number().n };
    }
    if (this.isWord(t, 'ct') && this.isWord(this.peek(1), 'mark') && this.isWord(this.peek(2), 'set')) {
      this.next();
      this.next();
      this.next();
      return { kind: 'ct-set', key: 'mark', source: this.source('mark', ctx) };
    }
    const left = this.lhsWithBinop(ctx.family);
    const leftEnd = this.lastBefore();
    if (this.isWord(this.peek(), 'set')) {
      this.next();
      if (left.kind === 'exthdr' && this.isWord(this.peek(), 'rt') && this.isWord(this.peek(1), 'mtu')) {
        this.next();
        this.next();
        return { kind: 'field-set', target: left, source: { kind: 'text', text: 'rt mtu' } };
      }
      return { kind: 'field-set', target: left, source: this.source(left.type, ctx) };
    }
    if (this.isWord(this.peek(), 'vmap')) {
      this.next();
      return { kind: 'vmap', lookup: this.mapLookup(left, ['verdict'], ctx) };
    }
    const { op, right } = this.rhs(left, ctx);
    if (right.kind === 'setref' && left.kind !== 'concat') {
      const ref = ctx.setRefs[ctx.setRefs.length - 1] as Named;
      ctx.setMatches.push({ name: right.name, type: left.type, left: this.span(t, leftEnd), ref: { line: ref.span.line, col: ref.span.col - 1, endCol: ref.span.endCol } });
    }
    if (((left.kind === 'meta' && left.key === 'l4proto') || (left.kind === 'payload' && left.proto === 'ip' && left.field === 'protocol')) && (op === 'implicit' || op === '==') && right.kind === 'value' && right.value.type === 'inet_proto') {
      const name = TRANSPORT_BY_NUMBER.get(right.value.n);
      // A later protocol match replaces an earlier one, not a header's.
      if (name !== undefined && this.l4?.header !== true) this.l4 = { protos: [name], span: this.span(t, this.lastBefore()) };
      if (name !== undefined) this.thProto = name;
    } else if (((left.kind === 'meta' && left.key === 'l4proto') || (left.kind === 'payload' && left.proto === 'ip' && left.field === 'protocol')) && (op === 'implicit' || op === '==') && right.kind === 'set' && this.lastProtoSet !== undefined) {
      const protos = this.lastProtoSet.map((n) => TRANSPORT_BY_NUMBER.get(n) ?? String(n));
      this.l4 = { protos, span: this.span(t, this.lastBefore()) };
    }
    if (left.kind === 'binop' && left.op === '&' && (left.type === 'ipv4_addr' || left.type === 'mark') && (op === 'implicit' || op === '==' || op === '!=') && right.kind === 'value' && right.value.type === left.type) {
      // An address or mark under a contiguous mask is a prefix: `ip saddr & 255.255.0.0 == 10.1.0.0`
      // lists as `ip saddr 10.1.0.0/16`, `meta mark & 0xffff0000 == 0` as `meta mark 0x00000000/16`.
      const m = (left.right as { n: number }).n;
      const len = 32 - Math.log2(((~m) >>> 0) + 1);
      if (Number.isInteger(len)) {
        const prefix: Rhs = len === 32 ? right : { kind: 'prefix', type: left.type, addr: right.value.n, len };
        return { kind: 'match', left: left.left, op: op === '!=' ? '!=' : 'implicit', right: prefix };
      }
    }
    if (left.kind === 'binop' && left.op === '&' && isBitmask(left.type) && op === '!=' && right.kind === 'value') {
      return { kind: 'match', left: left.left, op: '!=', right: { kind: 'mask', value: right.value, mask: left.right } };
    }
    if (left.kind === 'binop' && left.op === '&' && isBitmask(left.type) && (op === 'implicit' || op === '==') && right.kind === 'value') {
      // `tcp flags & (syn|ack) == syn` is stored as value/mask; nft lists it as `syn / syn,ack`.
      const mask = left.right as { n: number };
      const single = (mask.n & (mask.n - 1)) === 0;
      if (mask.n !== (right.value as { n: number }).n || !single) return { kind: 'match', left: left.left, op: 'implicit', right: { kind: 'mask', value: right.value, mask: left.right } };
    }
    return { kind: 'match', left, op, right };
  }

  private logStmt(): Stmt {
    const out: { prefix?: string; level?: string; flags?: number; group?: number; snaplen?: number; queueThreshold?: number } = {};
    for (;;) {
      const t = this.peek();
      if (this.isWord(t, 'prefix')) {
        this.next();
        const s = this.next();
        if (s.kind !== 'string' && (s.kind !== 'word' || GLOBAL_KEYWORDS.has(s.text))) throw syntax(s, 'quoted string');
        out.prefix = s.text;
      } else if (this.isWord(t, 'level')) {
        this.next();
        const l = this.next();
        if (!this.isWord(l)) throw syntax(l);
        if (!['emerg', 'alert', 'crit', 'err', 'warn', 'notice', 'info', 'debug', 'audit'].includes(l.text)) throw new LocatedError('invalid log level', tokSpan(l));
        out.level = l.text;
      } else if (this.isWord(t, 'flags')) {
        this.next();
        out.flags = (out.flags ?? 0) | this.logFlags();
      } else if (this.isWord(t, 'group')) {
        this.next();
        out.group = this.number().n;
      } else if (this.isWord(t, 'snaplen')) {
        this.next();
        out.snaplen = this.number().n;
      } else if (this.isWord(t, 'queue-threshold')) {
        this.next();
        out.queueThreshold = this.number().n;
      } else break;
    }
    return { kind: 'log', ...out };
  }

  /** `all`, `tcp sequence,options`, `ip options`, `skuid`, `ether`. */
  private logFlags(): number {
    const t = this.next();
    if (this.isWord(t, 'all')) return 0x2f;
    if (this.isWord(t, 'skuid')) return 8;
    if (this.isWord(t, 'ether')) return 32;
    if (this.isWord(t, 'ip')) {
      this.expectWord('options');
      return 4;
    }
    if (this.isWord(t, 'tcp')) {
      let n = 0;
      for (;;) {
        const f = this.next();
        if (this.isWord(f, 'sequence')) n |= 1;
        else if (this.isWord(f, 'options')) n |= 2;
        else throw syntax(f);
        if (!this.isPunct(this.peek(), ',')) return n;
        this.next();
      }
    }
    throw syntax(t);
  }

  private limitStmt(): Stmt {
    this.expectWord('rate');
    let over = false;
    if (this.isWord(this.peek(), 'over')) {
      this.next();
      over = true;
    }
    let rate = this.number().n;
    let bytes = false;
    let unitText: string | undefined;
    const w = this.peek();
    const joined = this.isWord(w) ? /^(bytes|kbytes|mbytes)\/(second|minute|hour|day|week)$/.exec(w.text) : null;
    if (joined !== null) {
      // The scanner reads `kbytes/second` as one word.
      this.next();
      bytes = true;
      rate *= BYTE_UNITS[joined[1] as string] as number;
      unitText = joined[2];
    } else if (this.isWord(w) && BYTE_UNITS[w.text] !== undefined) {
      bytes = true;
      rate *= BYTE_UNITS[this.next().text] as number;
    }
    if (unitText === undefined) {
      this.expectPunct('/');
      const unit = this.next();
      if (!this.isWord(unit) || !['second', 'minute', 'hour', 'day', 'week'].includes(unit.text)) throw syntax(unit);
      unitText = unit.text;
    }
    let burst = bytes ? 0 : 5;
    if (this.isWord(this.peek(), 'burst')) {
      this.next();
      burst = this.number().n;
      const u = this.next();
      if (bytes && this.isWord(u) && BYTE_UNITS[u.text] !== undefined) burst *= BYTE_UNITS[u.text] as number;
      else if (bytes || !this.isWord(u, 'packets')) throw syntax(u);
    }
    return { kind: 'limit', over, rate, unit: unitText, burst, ...(bytes && { bytes }) };
  }

  /** `quota [over|until] N UNIT [used N UNIT]`. */
  private quotaStmt(): Stmt {
    let over = false;
    if (this.isWord(this.peek(), 'over')) {
      this.next();
      over = true;
    } else if (this.isWord(this.peek(), 'until')) this.next();
    const amount = (): number => {
      const n = this.number().n;
      const u = this.next();
      const m = this.isWord(u) ? BYTE_UNITS[u.text] : undefined;
      if (m === undefined) throw syntax(u);
      return n * m;
    };
    const bytes = amount();
    let used = 0;
    if (this.isWord(this.peek(), 'used')) {
      this.next();
      used = amount();
    }
    return { kind: 'quota', over, bytes, used };
  }

  private rejectStmt(ctx: RuleCtx, before: readonly Stmt[]): Stmt {
    const rejectTok = this.lastBefore();
    // In an inet table, once the rule has matched IPv4 the default reject is ICMP's.
    const ipv4Known = ctx.family === 'inet' && before.some((s) => s.kind === 'match' && (mentionsIpPayload(s.left) || usesProto(s.left, 'icmp') || (s.left.kind === 'meta' && s.left.key === 'nfproto')));
    if (!this.isWord(this.peek(), 'with')) return ipv4Known ? { kind: 'reject', with: { kind: 'icmp', code: 'port-unreachable' } } : { kind: 'reject' };
    this.next();
    const k = this.next();
    if (this.isWord(k, 'tcp')) {
      this.expectWord('reset', 'reset');
      // The latest protocol the rule matched decides (`icmp code 3 meta l4proto tcp` may reset).
      if (this.l4 !== undefined && (this.l4.protos.length > 1 || (this.thProto ?? this.l4.protos[0]) !== 'tcp')) throw new LocatedError('you cannot use tcp reset with this protocol', tokSpan(rejectTok), this.l4.span);
      return { kind: 'reject', with: { kind: 'tcp-reset' } };
    }
    if (this.isWord(k, 'icmp') || this.isWord(k, 'icmpx')) {
      if (this.isWord(this.peek(), 'type')) this.next();
      const code = this.next();
      const ok =
        k.text === 'icmp'
          ? ['net-unreachable', 'host-unreachable', 'prot-unreachable', 'port-unreachable', 'net-prohibited', 'host-prohibited', 'admin-prohibited', 'frag-needed']
          : ['port-unreachable', 'admin-prohibited', 'no-route', 'host-unreachable'];
      if (!this.isWord(code) || !ok.includes(code.text)) throw new LocatedError(`Could not parse ${k.text} code`, tokSpan(code));
      if (k.text === 'icmpx' && ctx.family === 'ip') throw new LocatedError('abstracted ICMP unreachable not supported', tokSpan(code), tokSpan(rejectTok));
      if (k.text === 'icmpx' && code.text === 'port-unreachable' && ipv4Known) return { kind: 'reject', with: { kind: 'icmp', code: 'port-unreachable' } };
      return { kind: 'reject', with: { kind: k.text === 'icmp' ? 'icmp' : 'icmpx', code: code.text } };
    }
    throw syntax(k);
  }

  private natStmt(kind: NatKind, ctx: RuleCtx, before: readonly Stmt[]): Stmt {
    const natTok = this.lastBefore();
    let ipFamily = false;
    if (this.isWord(this.peek(), 'ip') && this.isWord(this.peek(1), 'to')) {
      this.next();
      ipFamily = true;
    }
    let addr: Extract<Stmt, { kind: 'nat' }>['addr'];
    let port: { lo: number; hi: number } | undefined;
    if (this.isWord(this.peek(), 'to')) {
      this.next();
      const a = this.peek();
      if (kind === 'dnat' || kind === 'snat') {
        if (this.isPunct(a, ':')) {
          // port only
        } else if (a.kind === 'addr') {
          this.next();
          const lo = typeToken('ipv4_addr', a);
          if (this.isPunct(this.peek(), '-')) {
            this.next();
            const hiT = this.next();
            const hi = typeToken('ipv4_addr', hiT);
            addr = { kind: 'range', lo: (lo as { n: number }).n, hi: (hi as { n: number }).n };
          } else addr = { kind: 'value', value: lo };
        } else {
          const key = this.lhsWithBinop(ctx.family);
          this.expectWord('map');
          addr = { kind: 'map', lookup: this.mapLookup(key, ['ipv4_addr'], ctx) };
        }
      }
      if (this.isPunct(this.peek(), ':') || (kind === 'redirect' && this.peek().kind === 'number')) {
        if (this.isPunct(this.peek(), ':')) this.next();
        const portTok = this.peek();
        const lo = this.number().n;
        let hi = lo;
        if (this.isPunct(this.peek(), '-')) {
          this.next();
          hi = this.number().n;
        }
        port = { lo, hi };
        if (!hasTransport(before)) {
          throw new LocatedError('transport protocol mapping is only valid after transport protocol match', this.span(portTok, this.lastBefore()), tokSpan(natTok));
        }
      }
    }
    const flags: NatFlag[] = [];
    for (;;) {
      const f = this.peek();
      if (this.isWord(f) && (f.text === 'random' || f.text === 'fully-random' || f.text === 'persistent')) {
        this.next();
        if (!flags.includes(f.text)) flags.push(f.text);
        if (this.isPunct(this.peek(), ',')) this.next();
      } else break;
    }
    if (ctx.family === 'inet' && (kind === 'dnat' || kind === 'snat') && addr !== undefined && !ipFamily) {
      if (!before.some((s) => s.kind === 'match' && mentionsIp(s.left))) {
        throw new LocatedError('ip or ip6 must be specified with address for inet tables.', tokSpan(natTok));
      }
    }
    return { kind: 'nat', nat: kind, ipFamily: ctx.family === 'inet' && addr !== undefined && (kind === 'dnat' || kind === 'snat'), ...(addr !== undefined && { addr }), ...(port !== undefined && { port }), flags };
  }

  /** The value of a `set` statement: a constant, an expression, or a map lookup. */
  private source(type: DataType, ctx: RuleCtx): Source {
    const t = this.peek();
    if (t.kind === 'word' && isExprStart(t.text) && !(t.text === 'mark' && false)) {
      const e = this.lhsWithBinop(ctx.family);
      if (this.isWord(this.peek(), 'map')) {
        this.next();
        return { kind: 'map', lookup: this.mapLookup(e, [type], ctx) };
      }
      return { kind: 'expr', expr: e };
    }
    if (type === 'classid') return { kind: 'value', value: this.classid() };
    const v = this.next();
    return { kind: 'value', value: typeToken(type, v) };
  }

  /** A TC class id: `MAJOR:MINOR` (hex, either may be empty), `none` or `root`. */
  private classid(): Value {
    const t = this.next();
    let text = t.text;
    let last = t;
    if (this.isPunct(this.peek(), ':')) {
      last = this.next();
      text += ':';
      const m = this.peek();
      if (m.kind === 'number' || m.kind === 'word') {
        last = this.next();
        text += m.text;
      }
    } else if (this.isPunct(t, ':')) {
      const m = this.next();
      last = m;
      text += m.text;
    }
    return typeToken('classid', { ...t, text, endCol: last.endCol });
  }

  private mapLookup(key: Expr, data: readonly DataType[], ctx: RuleCtx): MapLookup {
    const t = this.peek();
    const keyType = key.kind === 'concat' ? key.parts.map((p) => p.type) : [key.type];
    if (this.isPunct(t, '@')) {
      this.next();
      const name = this.identifier();
      ctx.setRefs.push(name);
      return { key, map: { kind: 'ref', name: name.name } };
    }
    const open = this.expectPunct('{');
    const raws = this.rawElements(true);
    ctx.anonSpans.push(this.span(open, this.lastBefore()));
    const elements = raws.map((r) => {
      if (r.data?.kind === 'verdict' && r.data.chain !== undefined) ctx.targets.push(r.data.chain);
      return typeElement({ keyType, dataType: data }, r);
    });
    return { key, map: { kind: 'anon', elements: sortElements(elements), keyType } };
  }

  // ---- expressions

  private lhsWithBinop(family: Family): Expr {
    let e = this.lhs(family);
    for (;;) {
      const t = this.peek();
      const op = t.kind === 'punct' && (t.text === '&' || t.text === '|' || t.text === '^') ? t.text : this.isWord(t, 'and') ? '&' : this.isWord(t, 'or') ? '|' : this.isWord(t, 'xor') ? '^' : undefined;
      if (op === undefined) return e;
      this.next();
      const right = this.binopValue(e.type);
      if (op === '|' && e.kind === 'binop' && e.op === '&' && right.type !== 'ifname' && right.type !== 'verdict' && e.right.type !== 'ifname' && e.right.type !== 'verdict') {
        // The kernel's one bitwise operation keeps (x & m) ^ v; nft lists it as `& (m | v) | v`.
        e = { ...e, right: { ...e.right, n: (e.right.n | right.n) >>> 0 } };
      }
      e = { kind: 'binop', op, left: e, right, type: e.type };
    }
  }

  /** The constant of a bitwise operation: a value, `a,b` flags or `(a|b)`. */
  private binopValue(type: DataType): Value {
    if (this.isPunct(this.peek(), '(')) {
      this.next();
      let n = (typeToken(type, this.next()) as { n: number }).n;
      while (this.isPunct(this.peek(), '|')) {
        this.next();
        n |= (typeToken(type, this.next()) as { n: number }).n;
      }
      this.expectPunct(')');
      return { type: type as 'mark', n: n >>> 0 };
    }
    let n = (typeToken(type, this.next()) as { n: number }).n;
    while (isBitmask(type) && this.isPunct(this.peek(), ',')) {
      this.next();
      n |= (typeToken(type, this.next()) as { n: number }).n;
    }
    return { type: type as 'mark', n: n >>> 0 };
  }

  /** A concatenation of primary expressions. */
  private lhs(family: Family): Expr {
    const parts = [this.primary(family)];
    while (this.isPunct(this.peek(), '.')) {
      this.next();
      parts.push(this.primary(family));
    }
    if (parts.length === 1) return parts[0] as Expr;
    return { kind: 'concat', parts, type: 'integer' };
  }

  private primary(family: Family): Expr {
    const t = this.next();
    if (t.kind !== 'word') throw syntax(t);
    if (t.text === 'tcp' && this.isWord(this.peek(), 'option')) {
      this.next();
      const o = this.next();
      const fields = this.isWord(o) ? TCP_OPTIONS[o.text] : undefined;
      if (fields === undefined) throw syntax(o);
      const f = this.peek();
      if (this.isWord(f) && fields[f.text] !== undefined) {
        this.next();
        return { kind: 'exthdr', option: o.text, field: f.text, type: fields[f.text] as DataType };
      }
      return { kind: 'exthdr', option: o.text, type: 'boolean' };
    }
    if (NOT_MODELLED[t.text] !== undefined) throw new LocatedError(`${t.text} expressions are not modelled by netsim (${NOT_MODELLED[t.text]})`, tokSpan(t), undefined, 'unsupported');
    const proto = PAYLOAD[t.text];
    if (proto !== undefined) {
      const f = this.next();
      const type = this.isWord(f) ? proto[f.text] : undefined;
      if (type === undefined) throw syntax(f);
      if (t.text === 'th' && f.text === 'dport' && this.thProto === 'icmp') {
        // The bytes `th dport` reads are the ICMP checksum.
        return { kind: 'payload', proto: 'icmp', field: 'checksum', type: 'u16' };
      }
      if (t.text === 'th' && this.thProto !== undefined && PORTED.has(this.thProto)) {
        // With the transport protocol known, nft reads (and lists) `th` ports as that header's.
        return { kind: 'payload', proto: this.thProto, field: f.text, type };
      }
      if (TRANSPORT.has(t.text)) {
        // One rule reads one transport header: nft refuses a second, different one.
        // After a set of protocols (`meta l4proto { tcp, udp }`) any header conflicts; nft names the first other one.
        const other = this.l4 === undefined ? undefined : this.l4.protos.length > 1 ? this.l4.protos.find((p) => p !== t.text) : this.l4.protos[0] !== t.text ? this.l4.protos[0] : undefined;
        if (other !== undefined) this.deferred ??= new LocatedError(`conflicting protocols specified: ${other} vs. ${t.text}`, this.span(t, f));
        this.l4 = { protos: [t.text], span: this.span(t, f), header: true };
        this.thProto = t.text;
      }
      return { kind: 'payload', proto: t.text, field: f.text, type };
    }
    if (t.text === 'meta') {
      const k = this.next();
      const type = this.isWord(k) ? META_KEYS[k.text] : undefined;
      if (type === undefined && k.kind === 'word' && !NFT_META_KEYS.includes(k.text) && !GLOBAL_KEYWORDS.has(k.text)) {
        // nft's scanner reads an unknown word after `meta` and names the keys it knows.
        throw new SyntaxError_(`syntax error, unexpected ${k.text}, known keys are ${NFT_META_KEYS.join(', ')}`, this.span(t, k), k);
      }
      if (type === undefined) throw syntax(k);
      if (k.text === 'nfproto' && family === 'ip') throw new LocatedError('meta nfproto is only useful in the inet family', this.span(t, k));
      return { kind: 'meta', key: k.text, type, bare: PRINT_BARE_META.has(k.text) };
    }
    if (BARE_META.has(t.text)) {
      return { kind: 'meta', key: t.text, type: META_KEYS[t.text] as DataType, bare: PRINT_BARE_META.has(t.text) };
    }
    if (t.text === 'ct') {
      const k = this.next();
      if (this.isWord(k, 'original') || this.isWord(k, 'reply')) {
        const a = this.next();
        let key = a.text;
        if (this.isWord(a, 'ip')) key = `ip ${this.next().text}`;
        const type = CT_DIR_KEYS[key];
        if (type === undefined) throw syntax(a);
        return { kind: 'ct', key, dir: k.text as 'original', type };
      }
      if (this.isWord(k, 'label') || this.isWord(k, 'event') || this.isWord(k, 'timeout') || this.isWord(k, 'expectation')) throw new LocatedError(`ct ${k.text} is not modelled by netsim`, this.span(t, k), undefined, 'unsupported');
      const type = this.isWord(k) ? CT_KEYS[k.text] : undefined;
      if (type === undefined) throw syntax(k);
      return { kind: 'ct', key: k.text, type };
    }
    if (t.text === 'fib') {
      const flags: string[] = [];
      for (;;) {
        const f = this.next();
        if (!this.isWord(f) || !['saddr', 'daddr', 'mark', 'iif', 'oif'].includes(f.text)) throw syntax(f);
        flags.push(f.text);
        if (!this.isPunct(this.peek(), '.')) break;
        this.next();
      }
      const r = this.next();
      if (this.isWord(r, 'type')) return { kind: 'fib', flags, result: 'type', type: 'fib_addrtype' };
      if (this.isWord(r, 'oif')) return { kind: 'fib', flags, result: 'oif', type: 'iface_index' };
      if (this.isWord(r, 'oifname')) return { kind: 'fib', flags, result: 'oifname', type: 'ifname' };
      throw syntax(r);
    }
    if (t.text === 'numgen') {
      const m = this.next();
      if (!this.isWord(m, 'random') && !this.isWord(m, 'inc')) throw syntax(m, 'random or inc');
      this.expectWord('mod');
      const mod = this.number().n;
      let offset = 0;
      if (this.isWord(this.peek(), 'offset')) {
        this.next();
        offset = this.number().n;
      }
      return { kind: 'numgen', mode: m.text as 'random', mod, offset, type: 'integer' };
    }
    throw syntax(t);
  }

  private rhs(left: Expr, ctx: RuleCtx): { op: MatchOp; right: Rhs } {
    let op: MatchOp = 'implicit';
    const t = this.peek();
    if (t.kind === 'punct' && ['==', '!=', '<', '>', '<=', '>='].includes(t.text)) {
      this.next();
      op = t.text as MatchOp;
    } else if (this.isWord(t) && ['eq', 'ne', 'lt', 'gt', 'le', 'ge'].includes(t.text)) {
      this.next();
      op = ({ eq: '==', ne: '!=', lt: '<', gt: '>', le: '<=', ge: '>=' } as const)[t.text as 'eq'];
    }
    const types = left.kind === 'concat' ? left.parts.map((p) => p.type) : [left.type];
    const n = this.peek();
    if (this.isPunct(n, '{')) {
      this.next();
      const raws = this.rawElements(false);
      const typed = raws.map((r) => typeElement({ keyType: types }, r));
      this.lastProtoSet = types.length === 1 && types[0] === 'inet_proto' ? typed.map((e) => { const k = e.key[0]; return k?.kind === 'value' && k.value.type !== 'ifname' && k.value.type !== 'verdict' ? k.value.n : -1; }) : undefined;
      let elements = dedupe(sortElements(typed));
      if (types.length === 1 && types[0] === 'ifname' && elements.some((e) => { const k = e.key[0]; return k?.kind === 'value' && k.value.type === 'ifname' && k.value.s.endsWith('*'); })) {
        // A wildcard makes the set an interval set: listed in the tree's order, by name.
        const name = (e: Element): string => { const k = e.key[0]; return k?.kind === 'value' && k.value.type === 'ifname' ? k.value.s.replace(/\*$/, '') : ''; };
        elements = [...elements].sort((a, b) => (name(a) < name(b) ? -1 : name(a) > name(b) ? 1 : 0));
      }
      const hasInterval = elements.some((e) => e.key.some((k) => k.kind === 'range'));
      if (hasInterval && types.length === 1) elements = automerge(elements, types[0] as DataType);
      if (raws.length === 1 && elements.length === 1 && types.length === 1) {
        // nft turns a one-element anonymous set into a plain comparison.
        const k = (elements[0] as Element).key[0];
        const raw = raws[0];
        if (k !== undefined && raw !== undefined) {
          if (k.kind === 'value') return { op, right: { kind: 'value', value: k.value } };
          if (raw.key[0]?.kind === 'prefix' || (k.form === 'prefix' && raws.length === 1)) {
            return { op, right: prefixRhs(k.type, k.lo, k.hi) };
          }
          return { op, right: { kind: 'range', type: k.type, lo: k.lo, hi: k.hi } };
        }
      }
      ctx.anonSpans.push(this.span(n, this.lastBefore()));
      return { op, right: { kind: 'set', elements, keyType: types } };
    }
    if (this.isPunct(n, '@')) {
      this.next();
      const name = this.identifier();
      ctx.setRefs.push(name);
      return { op, right: { kind: 'setref', name: name.name } };
    }
    if (types.length > 1) {
      const parts = this.rawConcat();
      const el = typeElement({ keyType: types }, { key: parts, span: tokSpan(n) });
      return { op, right: { kind: 'set', elements: [el], keyType: types } };
    }
    const type = types[0] as DataType;
    if ((this.isWord(n, 'exists') || this.isWord(n, 'missing')) && (left.kind === 'fib' || left.kind === 'exthdr')) {
      this.next();
      return { op, right: { kind: 'value', value: { type: 'boolean', n: n.text === 'exists' ? 1 : 0 } } };
    }
    if (isBitmask(type)) {
      // `(syn | ack)` is the same value as `syn | ack` (nft's parenthesised expression).
      const paren = this.isPunct(this.peek(), '(');
      if (paren) this.next();
      const vals: Token[] = [this.next()];
      while (this.isPunct(this.peek(), ',') || this.isPunct(this.peek(), '|')) {
        this.next();
        vals.push(this.next());
      }
      if (paren) this.expectPunct(')', "')'");
      let v = 0;
      for (const tok of vals) v |= (typeToken(type, tok) as { n: number }).n;
      const value: Value = { type: type as 'ct_state', n: v };
      if (this.isPunct(this.peek(), '/')) {
        this.next();
        let m = 0;
        m |= (typeToken(type, this.next()) as { n: number }).n;
        while (this.isPunct(this.peek(), ',')) {
          this.next();
          m |= (typeToken(type, this.next()) as { n: number }).n;
        }
        return { op, right: { kind: 'mask', value, mask: { type: type as 'ct_state', n: m } } };
      }
      return { op, right: { kind: 'value', value } };
    }
    if (type === 'classid') return { op, right: { kind: 'value', value: this.classid() } };
    const atom = this.rawAtom();
    const kp = typeAtom(type, atom);
    if (kp.kind === 'value') return { op, right: { kind: 'value', value: kp.value } };
    if (atom.kind === 'prefix') return { op, right: prefixRhs(type, kp.lo, kp.hi) };
    return { op, right: { kind: 'range', type, lo: kp.lo, hi: kp.hi } };
  }
}

interface RuleCtx {
  readonly family: Family;
  readonly setMatches: { readonly name: string; readonly type: DataType; readonly left: Span; readonly ref: Span }[];
  readonly objRefs: (Named & { readonly type: NftObject['kind'] })[];
  readonly updateSpans: Span[];
  readonly anonSpans: Span[];
  readonly setRefs: Named[];
  readonly targets: Named[];
  readonly jumps: { chain: string; span: Span }[];
}

function prefixRhs(type: DataType, lo: number, hi: number): Rhs {
  const size = hi - lo + 1;
  const len = 32 - Math.round(Math.log2(size));
  if (len === 32) return { kind: 'value', value: { type: type as 'ipv4_addr', n: lo } };
  return { kind: 'prefix', type, addr: lo, len };
}

function isExprStart(w: string): boolean {
  return w in PAYLOAD || w in NOT_MODELLED || w === 'meta' || w === 'ct' || w === 'fib' || w === 'numgen' || BARE_META.has(w);
}

function mentionsIp(e: Expr): boolean {
  if (e.kind === 'payload') return e.proto === 'ip';
  if (e.kind === 'concat') return e.parts.some(mentionsIp);
  if (e.kind === 'binop') return mentionsIp(e.left);
  if (e.kind === 'meta') return e.key === 'nfproto';
  return false;
}

function hasTransport(stmts: readonly Stmt[]): boolean {
  return stmts.some(
    (s) =>
      s.kind === 'match' &&
      // `th` names no protocol: it does not count.
      ((s.left.kind === 'payload' && (PORTED.has(s.left.proto) || s.left.field === 'protocol')) ||
        (s.left.kind === 'meta' && s.left.key === 'l4proto') ||
        (s.left.kind === 'concat' && s.left.parts.some((p) => p.kind === 'payload' && (p.proto === 'tcp' || p.proto === 'udp' || p.proto === 'th')))),
  );
}

/** Drops repeated keys of an anonymous set (sorted, so repeats are neighbours). */
function dedupe(els: readonly Element[]): Element[] {
  const out: Element[] = [];
  let last: string | undefined;
  for (const e of els) {
    const id = keyId(e.key);
    if (id === last) continue;
    last = id;
    out.push(e);
  }
  return out;
}

/** Sorts elements as nft lists them. */
export function sortElements(els: readonly Element[]): Element[] {
  return [...els].sort((a, b) => compareKeysImport(a, b));
}

import { compareKeys } from './elements.ts';
function compareKeysImport(a: Element, b: Element): number {
  return compareKeys(a.key, b.key);
}

/** The printed form of an expression (also `typeof` text). */
export function exprText(e: Expr): string {
  switch (e.kind) {
    case 'payload':
      return `${e.proto} ${e.field}`;
    case 'meta':
      return e.bare ? e.key : `meta ${e.key}`;
    case 'ct':
      return e.dir !== undefined ? `ct ${e.dir} ${e.key}` : `ct ${e.key}`;
    case 'exthdr':
      return `tcp option ${e.option}${e.field !== undefined ? ` ${e.field}` : ''}`;
    case 'fib':
      return `fib ${e.flags.join(' . ')} ${e.result}`;
    case 'numgen':
      return `numgen ${e.mode} mod ${e.mod}${e.offset !== 0 ? ` offset ${e.offset}` : ''}`;
    case 'concat':
      return e.parts.map(exprText).join(' . ');
    case 'binop':
      return `${exprText(e.left)} ${e.op} ${valueTextForBinop(e.right)}`;
  }
}

import { formatValue } from './datatypes.ts';
function valueTextForBinop(v: Value): string {
  return formatValue(v);
}

/** Bit offset and width of the byte-aligned header fields nft may merge (`nft describe`). */
const FIELD_BITS: Readonly<Record<string, Readonly<Record<string, readonly [number, number]>>>> = {
  ip: { length: [16, 16], id: [32, 16], 'frag-off': [48, 16], ttl: [64, 8], protocol: [72, 8], checksum: [80, 16], saddr: [96, 32], daddr: [128, 32] },
  tcp: { sport: [0, 16], dport: [16, 16], sequence: [32, 32], ackseq: [64, 32], window: [112, 16], checksum: [128, 16], urgptr: [144, 16] },
  udp: { sport: [0, 16], dport: [16, 16], length: [32, 16], checksum: [48, 16] },
  udplite: { sport: [0, 16], dport: [16, 16] },
  sctp: { sport: [0, 16], dport: [16, 16] },
  dccp: { sport: [0, 16], dport: [16, 16] },
  th: { sport: [0, 16], dport: [16, 16] },
  icmp: { type: [0, 8], code: [8, 8], checksum: [16, 16], id: [32, 16], sequence: [48, 16] },
};

/**
 * nft merges equality matches on adjacent fields of one header into one comparison of at most 32
 * bits (`tcp dport 80 tcp sport 1024`), and lists the result split again in header order at the
 * place of the last of them (`tcp sport 1024 tcp dport 80`).
 */
function mergePayloads(stmts: readonly Stmt[]): Stmt[] {
  type Cand = { i: number; proto: string; off: number; len: number };
  const cands: Cand[] = [];
  stmts.forEach((s, i) => {
    if (s.kind !== 'match' || s.left.kind !== 'payload' || (s.op !== 'implicit' && s.op !== '==') || s.right.kind !== 'value') return;
    const fb = FIELD_BITS[s.left.proto]?.[s.left.field];
    if (fb !== undefined) cands.push({ i, proto: s.left.proto, off: fb[0], len: fb[1] });
  });
  if (cands.length < 2) return stmts as Stmt[];
  const groups: Cand[][] = [];
  for (const base of [['ip'], ['tcp', 'udp', 'udplite', 'sctp', 'dccp', 'th', 'icmp']]) {
    const cs = cands.filter((c) => base.includes(c.proto)).sort((a, b) => a.off - b.off || a.i - b.i);
    let run: Cand[] = [];
    for (const c of cs) {
      const last = run[run.length - 1];
      const bits = run.reduce((n, x) => n + x.len, 0);
      if (last !== undefined && c.off === last.off + last.len && bits + c.len <= 32 && c.proto === last.proto) run.push(c);
      else {
        if (run.length > 1) groups.push(run);
        run = [c];
      }
    }
    if (run.length > 1) groups.push(run);
  }
  if (groups.length === 0) return stmts as Stmt[];
  const moved = new Set(groups.flat().map((c) => c.i));
  const out: Stmt[] = [];
  stmts.forEach((s, i) => {
    const g = groups.find((x) => Math.max(...x.map((c) => c.i)) === i);
    if (g !== undefined) for (const c of g) out.push(stmts[c.i] as Stmt);
    else if (!moved.has(i)) out.push(s);
  });
  return out;
}

/**
 * `reject with tcp reset` makes nft put `meta l4proto tcp` first in a rule that matched no
 * transport protocol: `th` ports before it then read as TCP's.
 */
function resetDependency(stmts: readonly Stmt[]): Stmt[] {
  const ri = stmts.findIndex((s) => s.kind === 'reject' && s.with?.kind === 'tcp-reset');
  if (ri < 0) return stmts as Stmt[];
  const fixes = (e: Expr): boolean => (e.kind === 'payload' && e.proto !== 'ip' && e.proto !== 'th') || (e.kind === 'meta' && e.key === 'l4proto') || (e.kind === 'concat' && e.parts.some(fixes)) || (e.kind === 'binop' && fixes(e.left));
  if (stmts.slice(0, ri).some((s) => s.kind === 'match' && fixes(s.left))) return stmts as Stmt[];
  const th = (e: Expr): Expr => (e.kind === 'payload' && e.proto === 'th' ? { ...e, proto: 'tcp' } : e.kind === 'concat' ? { ...e, parts: e.parts.map(th) } : e);
  return stmts.map((s, i) => (i < ri && s.kind === 'match' ? { ...s, left: th(s.left) } : s));
}

/**
 * `icmp id` and `icmp sequence` exist only in echo messages: nft adds `icmp type { echo-reply,
 * echo-request }` before the first of them when no `icmp type` match comes earlier.
 */
function icmpEchoDependency(stmts: readonly Stmt[]): Stmt[] {
  const i = stmts.findIndex((s) => s.kind === 'match' && s.left.kind === 'payload' && s.left.proto === 'icmp' && (s.left.field === 'id' || s.left.field === 'sequence'));
  if (i < 0) return stmts as Stmt[];
  if (stmts.slice(0, i).some((s) => s.kind === 'match' && s.left.kind === 'payload' && s.left.proto === 'icmp' && s.left.field === 'type')) return [...stmts];
  const echo = (n: number): Element => ({ key: [{ kind: 'value', value: { type: 'icmp_type', n } }] });
  const dep: Stmt = { kind: 'match', left: { kind: 'payload', proto: 'icmp', field: 'type', type: 'icmp_type' }, op: 'implicit', right: { kind: 'set', elements: [echo(0), echo(8)], keyType: ['icmp_type'] } };
  return [...stmts.slice(0, i), dep, ...stmts.slice(i)];
}

/**
 * nft drops a protocol match it considers the dependency of a later header match when listing:
 * `meta l4proto tcp` before `tcp dport` (both families), and `ip protocol tcp` in the ip family.
 */
function markDependencies(stmts: readonly Stmt[], family: Family): Stmt[] {
  const out = [...stmts];
  for (let i = 0; i < out.length; i++) {
    const s = out[i] as Stmt;
    if (s.kind !== 'match' || (s.op !== 'implicit' && s.op !== '==') || s.right.kind !== 'value') continue;
    if (family === 'inet' && s.left.kind === 'meta' && s.left.key === 'nfproto' && s.right.value.type === 'nf_proto' && s.right.value.n === 2) {
      // `meta nfproto ipv4` is the implicit dependency of a later `ip …` match (or ICMP reject) in inet tables.
      const next = out[i + 1];
      if (out.slice(i + 1).some((x) => x.kind === 'match' && mentionsIpPayload(x.left)) || (next?.kind === 'reject' && next.with?.kind === 'icmp' && next.with.code !== 'port-unreachable')) out[i] = { ...s, hidden: true };
      continue;
    }
    const isMetaL4 = s.left.kind === 'meta' && s.left.key === 'l4proto';
    const isIpProto = s.left.kind === 'payload' && s.left.proto === 'ip' && s.left.field === 'protocol';
    if (!isMetaL4 && !(isIpProto && family === 'ip')) continue;
    const v = s.right.value;
    if (v.type !== 'inet_proto') continue;
    const name = v.n === 6 ? 'tcp' : v.n === 17 ? 'udp' : v.n === 1 ? 'icmp' : undefined;
    if (name === undefined) continue;
    const later = out.slice(i + 1).find((x) => x.kind === 'match' && usesProto(x.left, name));
    const between = out.slice(i + 1).findIndex((x) => x.kind === 'match' && usesProto(x.left, name));
    if (later === undefined) continue;
    // Only when nothing else defining the transport protocol sits between them.
    const mid = out.slice(i + 1, i + 1 + between);
    if (mid.some((x) => x.kind === 'match' && ((x.left.kind === 'meta' && x.left.key === 'l4proto') || (x.left.kind === 'payload' && x.left.field === 'protocol')))) continue;
    out[i] = { ...s, hidden: true };
  }
  return out;
}

function mentionsIpPayload(e: Expr): boolean {
  if (e.kind === 'payload') return e.proto === 'ip';
  if (e.kind === 'concat') return e.parts.some(mentionsIpPayload);
  if (e.kind === 'binop') return mentionsIpPayload(e.left);
  return false;
}

function usesProto(e: Expr, name: string): boolean {
  if (e.kind === 'payload') return e.proto === name;
  if (e.kind === 'concat') return e.parts.some((p) => usesProto(p, name));
  if (e.kind === 'binop') return usesProto(e.left, name);
  return false;
}

export { prioNameAllowed };

/** Which standard priority names nft accepts for a hook (the rest: "invalid priority expression"). */
function prioNameAllowed(name: string, hook: Hook, _type: ChainType): boolean {
  switch (name) {
    case 'raw':
    case 'mangle':
    case 'filter':
    case 'security':
      return true;
    case 'dstnat':
      return hook === 'prerouting';
    case 'srcnat':
      return hook === 'postrouting';
    default:
      return false;
  }
}
