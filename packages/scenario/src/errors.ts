/**
 * Errors of the scenario format. Every problem in a scenario file names the file, the line and
 * column of the offending YAML node, the field's path and what was expected.
 */

/**
 * - `syntax`: the text is not well-formed YAML, or uses aliases badly (an alias to no anchor, or
 *   so many alias references that expanding them would exhaust memory: a "billion laughs");
 * - `invalid`: the YAML does not fit the scenario schema (a wrong type, an unknown key, a missing key);
 * - `rejected`: the schema accepts it but the Kubernetes API server would refuse it (a Service
 *   name that is not a DNS-1035 label, a node port outside 30000-32767, a bad port name, a name
 *   too long, duplicate ports…), with the API server's message;
 * - `reference`: a name refers to nothing (an unknown node, host, Service or invariant) or a time is out of range;
 * - `network`: the data plane the file describes cannot be built: the kernel refuses a host-file
 *   line (`ip addr add` on an interface that does not exist, an unknown sysctl), a link names a
 *   missing interface, or a timeline command would fail when it runs;
 * - `io`: the file or directory could not be read.
 */
export type ScenarioErrorCode = 'syntax' | 'invalid' | 'rejected' | 'reference' | 'network' | 'io';

/** One problem at one place in a scenario file. */
export interface ScenarioIssue {
  readonly file: string;
  /** 1-based. */
  readonly line: number;
  /** 1-based. */
  readonly column: number;
  /** The field, as `timeline[2].at` (empty for the document itself). */
  readonly path: string;
  readonly message: string;
}

/** `file:line:column: path: message`, the form editors and terminals link. */
export function formatIssue(i: ScenarioIssue): string {
  return `${i.file}:${i.line}:${i.column}: ${i.path === '' ? '' : `${i.path}: `}${i.message}`;
}

/**
 * A scenario that cannot be loaded. `message` lists every issue, one per line, sorted by position.
 *
 * @example
 * ```ts
 * try { loadScenario(text, { file: 'x.yaml' }); }
 * catch (e) { if (isScenarioError(e)) for (const i of e.issues) console.error(formatIssue(i)); else throw e; }
 * ```
 */
export class ScenarioError extends Error {
  readonly code: ScenarioErrorCode;
  readonly issues: readonly ScenarioIssue[];

  constructor(code: ScenarioErrorCode, issues: readonly ScenarioIssue[], message?: string) {
    super(message ?? issues.map(formatIssue).join('\n'));
    this.name = 'ScenarioError';
    this.code = code;
    this.issues = issues;
  }
}

/** Whether `e` is a {@link ScenarioError}. */
export function isScenarioError(e: unknown): e is ScenarioError {
  return e instanceof ScenarioError;
}
