/**
 * Field validation with apimachinery's error shapes: each problem is a field path, a type
 * (`Required value`, `Invalid value`, `Forbidden`, `Unsupported value`) and a detail, and the
 * API error reads `Pod "web" is invalid: spec.containers: Required value` (several problems are
 * bracketed and comma-separated, as the real aggregate prints them).
 */
import { KubeError } from './errors.ts';
import { tryParseCidr4, tryParseIpv4 } from './ipv4.ts';
import type { Kind } from './objects.ts';

export interface FieldError {
  readonly field: string;
  readonly type: 'Required value' | 'Invalid value' | 'Forbidden' | 'Unsupported value' | 'Duplicate value';
  readonly value?: string | number;
  readonly detail?: string;
}

export function formatFieldError(e: FieldError): string {
  let s = `${e.field}: ${e.type}`;
  if (e.value !== undefined) s += `: ${typeof e.value === 'string' ? JSON.stringify(e.value) : String(e.value)}`;
  if (e.detail !== undefined) s += `: ${e.detail}`;
  return s;
}

const QUALIFIED_KIND: Readonly<Record<Kind, string>> = {
  Pod: 'Pod',
  Service: 'Service',
  EndpointSlice: 'EndpointSlice.discovery.k8s.io',
  Node: 'Node',
};

/** apimachinery's `NewInvalid`: one error printed bare, several bracketed. */
export function invalidError(kind: Kind, name: string, errs: readonly FieldError[]): KubeError {
  const parts = errs.map(formatFieldError);
  const agg = parts.length === 1 ? (parts[0] as string) : `[${parts.join(', ')}]`;
  return new KubeError('Invalid', `${QUALIFIED_KIND[kind]} ${JSON.stringify(name)} is invalid: ${agg}`);
}

const DNS1123_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const DNS1123_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const DNS1035_LABEL = /^[a-z]([-a-z0-9]*[a-z0-9])?$/;

const SUBDOMAIN_MSG =
  "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
const LABEL_MSG =
  "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";
const DNS1035_MSG =
  "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')";

/** Name rules per kind: Services use DNS-1035 labels, everything else DNS-1123 subdomains. */
export function validateName(kind: Kind, name: string, errs: FieldError[]): void {
  if (name === '') {
    errs.push({ field: 'metadata.name', type: 'Required value', detail: 'name or generateName is required' });
    return;
  }
  if (kind === 'Service') {
    if (name.length > 63) errs.push({ field: 'metadata.name', type: 'Invalid value', value: name, detail: 'must be no more than 63 characters' });
    else if (!DNS1035_LABEL.test(name)) errs.push({ field: 'metadata.name', type: 'Invalid value', value: name, detail: DNS1035_MSG });
    return;
  }
  if (name.length > 253) errs.push({ field: 'metadata.name', type: 'Invalid value', value: name, detail: 'must be no more than 253 characters' });
  else if (!DNS1123_SUBDOMAIN.test(name)) errs.push({ field: 'metadata.name', type: 'Invalid value', value: name, detail: SUBDOMAIN_MSG });
}

export function validateNamespace(ns: string, errs: FieldError[]): void {
  if (ns.length > 63) errs.push({ field: 'metadata.namespace', type: 'Invalid value', value: ns, detail: 'must be no more than 63 characters' });
  else if (!DNS1123_LABEL.test(ns)) errs.push({ field: 'metadata.namespace', type: 'Invalid value', value: ns, detail: LABEL_MSG });
}

export function validatePort(field: string, port: number, errs: FieldError[]): void {
  if (!Number.isInteger(port) || port < 1 || port > 65535) errs.push({ field, type: 'Invalid value', value: port, detail: 'must be between 1 and 65535, inclusive' });
}

const PROTOCOLS: readonly string[] = ['TCP', 'UDP', 'SCTP'];
export function validateProtocol(field: string, protocol: string, errs: FieldError[]): void {
  if (!PROTOCOLS.includes(protocol)) errs.push({ field, type: 'Unsupported value', value: protocol, detail: 'supported values: "SCTP", "TCP", "UDP"' });
}

export function validateIpv4(field: string, ip: string, errs: FieldError[]): void {
  if (tryParseIpv4(ip) === undefined) errs.push({ field, type: 'Invalid value', value: ip, detail: 'must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)' });
}

export function validateCidr(field: string, cidr: string, errs: FieldError[]): void {
  if (tryParseCidr4(cidr) === undefined) errs.push({ field, type: 'Invalid value', value: cidr, detail: 'must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)' });
}

/** The real message the API server gives when a Pod update changes an immutable spec field. */
export const POD_SPEC_FORBIDDEN =
  'pod updates may not change fields other than `spec.containers[*].image`,`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)';
