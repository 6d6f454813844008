/**
 * API errors as the real API server reports them: a Status with an HTTP code, a machine-readable
 * reason and the same message text (`pods "web-0" not found`, `Operation cannot be fulfilled on
 * …`). Users match on `code`, never on the message.
 */

/** The error kinds netsim's API server produces, named after apimachinery's `StatusReason`. */
export type KubeErrorCode =
  /** 404: the object does not exist. */
  | 'NotFound'
  /** 409: create of a name that exists. */
  | 'AlreadyExists'
  /** 409: stale resourceVersion on update, or a failed delete precondition. */
  | 'Conflict'
  /** 422: the object failed validation. */
  | 'Invalid'
  /** 410: a watch asked for a resourceVersion the server's history no longer holds. */
  | 'Expired'
  /** 504: a watch or list asked for a resourceVersion newer than the server's. */
  | 'Timeout'
  /** 400: a malformed request (e.g. an unparsable resourceVersion). */
  | 'BadRequest'
  /** 500: the server could not complete the request (e.g. the service IP range is full). */
  | 'InternalError';

const HTTP_CODE: Readonly<Record<KubeErrorCode, number>> = {
  NotFound: 404,
  AlreadyExists: 409,
  Conflict: 409,
  Invalid: 422,
  Expired: 410,
  Timeout: 504,
  BadRequest: 400,
  InternalError: 500,
};

/** The wire form of an error, as carried by a watch `ERROR` event (apimachinery's `metav1.Status`). */
export interface Status {
  readonly kind: 'Status';
  readonly status: 'Failure';
  readonly code: number;
  readonly reason: KubeErrorCode;
  readonly message: string;
}

/**
 * An error returned by the API server.
 *
 * @example
 * ```ts
 * try { api.get('Pod', 'default', 'web-0'); }
 * catch (e) { if (isKubeError(e) && e.code === 'NotFound') { … } }
 * ```
 */
export class KubeError extends Error {
  override readonly name = 'KubeError';
  readonly code: KubeErrorCode;
  /** The HTTP status code the real API server answers with. */
  readonly httpStatus: number;

  constructor(code: KubeErrorCode, message: string) {
    super(message);
    this.code = code;
    this.httpStatus = HTTP_CODE[code];
  }

  /** The `metav1.Status` form, as a watch ERROR event carries it. */
  toStatus(): Status {
    return { kind: 'Status', status: 'Failure', code: this.httpStatus, reason: this.code, message: this.message };
  }
}

export function isKubeError(e: unknown): e is KubeError {
  return e instanceof KubeError;
}

/** True for the 410 a watch gets when its resourceVersion fell out of the server's history. */
export function isExpired(e: unknown): boolean {
  return isKubeError(e) && e.code === 'Expired';
}
