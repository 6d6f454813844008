/**
 * Errors of the reference controllers.
 *
 * Controllers run as the real agents do: an operation that fails (an `iptables` command, an API
 * request, an exhausted port range) is returned to the sync loop, logged and retried, exactly
 * where the Go code returns an `error`. A bug in the controller itself (a `TypeError`, a misuse
 * of the engine) must not be retried quietly: it is rethrown, so the simulation reports it as a
 * finding.
 */
import { isSimError } from '@netsim/sim';

/** True for errors that mean the controller's code is wrong, not that the world said no. */
export function isProgrammerError(e: unknown): boolean {
  return e instanceof TypeError || e instanceof ReferenceError || e instanceof SyntaxError || isSimError(e);
}

/** The message of an error-like value. */
export function errorMessage(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

/** Options a controller factory got that it cannot use: a typed error with the offending field. */
export class ControllerOptionsError extends Error {
  override readonly name = 'ControllerOptionsError';
  readonly code = 'invalid-controller-options' as const;
  readonly controller: string;
  readonly field: string;

  constructor(controller: string, field: string, message: string) {
    super(`controller ${controller}: option "${field}" ${message}`);
    this.controller = controller;
    this.field = field;
  }
}

/** True when `e` is a {@link ControllerOptionsError}. */
export function isControllerOptionsError(e: unknown): e is ControllerOptionsError {
  return e instanceof ControllerOptionsError;
}
