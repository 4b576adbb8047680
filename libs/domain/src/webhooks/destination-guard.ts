import { lookup } from 'node:dns/promises';
import type { Environment } from '@lop/contract';
import ipaddr from 'ipaddr.js';

/**
 * Where a webhook may go (spec § Delivery and retry, endpoint safety). Public HTTPS only, no user
 * information, and every address a name resolves to must be public unicast: one private answer
 * among public ones refuses the whole destination. DNS is resolved again at every attempt and the
 * request connects to the vetted address itself, so nothing can change between check and connect.
 */

export class BlockedDestinationError extends Error {
  override name = 'BlockedDestinationError';
}

/** All addresses a host name resolves to. Injected in tests; the system resolver otherwise. */
export type Resolver = (hostname: string) => Promise<string[]>;

export const systemResolver: Resolver = async (hostname) => (await lookup(hostname, { all: true, verbatim: true })).map((entry) => entry.address);

/** A port this service itself listens on (or its database does), with what it is, for the refusal. */
export interface ServicePort {
  port: number;
  role: string;
}

/** Where webhooks may go, from configuration (see webhookSettings). */
export interface DestinationPolicy {
  /** PARTNER_WEBHOOKS_ALLOW_LOOPBACK: http(s)://127.0.0.1:<port> and localhost:<port>, sandbox only. */
  allowLoopback: boolean;
  /**
   * Loopback ports the allowance never covers: the service's own API, metrics and database. A
   * sandbox subscription must not turn the worker into a client of its own internals.
   */
  servicePorts: readonly ServicePort[];
}

export interface GuardOptions extends DestinationPolicy {
  environment: Environment;
}

/** A destination that passed every check: connect to `address`, present `hostname` for SNI and Host. */
export interface VettedDestination {
  url: URL;
  hostname: string;
  address: string;
  family: 4 | 6;
  port: number;
  protocol: 'https:' | 'http:';
  /** True only for the loopback allowance of local development. */
  loopback: boolean;
}

const LOOPBACK_NAMES = new Set(['127.0.0.1', 'localhost']);

/**
 * Names that are never public by definition, whatever a resolver says: localhost (RFC 6761),
 * mDNS .local (RFC 6762), .home.arpa (RFC 8375) and the private-use .internal (ICANN, 2024).
 */
const NON_PUBLIC_SUFFIXES = ['localhost', 'local', 'home.arpa', 'internal'];

function isNonPublicName(hostname: string): boolean {
  if (!hostname.includes('.')) return true;
  return NON_PUBLIC_SUFFIXES.some((suffix) => hostname === suffix || hostname.endsWith(`.${suffix}`));
}

/**
 * ipaddr.js names the special-purpose ranges; only `unicast` is public. IPv4-mapped addresses
 * are judged by the IPv4 address inside them. Other transition forms (NAT64, 6to4, Teredo) are
 * refused outright: they route to translators whose far side we cannot see.
 */
const EXTRA_BLOCKED_CIDRS = [
  // IPv4-compatible IPv6 (deprecated): ipaddr.js calls it unicast, but it embeds an IPv4 address.
  '::/96',
  // Metadata services, named for clarity although their ranges are already refused.
  '169.254.169.254/32',
  'fd00:ec2::254/128',
  '100.100.100.200/32',
].map((cidr) => ipaddr.parseCIDR(cidr));

/** Why an address is not a public destination, or null when it is. */
export function blockedReason(address: string): string | null {
  if (!ipaddr.isValid(address)) return 'not an IP address';
  let parsed = ipaddr.parse(address);
  if (parsed.kind() === 'ipv6' && (parsed as ipaddr.IPv6).isIPv4MappedAddress()) parsed = (parsed as ipaddr.IPv6).toIPv4Address();
  for (const [range, bits] of EXTRA_BLOCKED_CIDRS) {
    if (range.kind() === parsed.kind() && parsed.match(range, bits)) return `${parsed.toString()} is in the blocked range ${range.toString()}/${bits}`;
  }
  const range = parsed.range();
  return range === 'unicast' ? null : `${parsed.toString()} is a ${range} address`;
}

/** IP literal of a URL host name (brackets removed), or null for a name. */
function ipLiteral(hostname: string): string | null {
  const bare = hostname.startsWith('[') && hostname.endsWith(']') ? hostname.slice(1, -1) : hostname;
  return ipaddr.isValid(bare) ? bare : null;
}

function parseUrl(text: string): URL {
  try {
    return new URL(text);
  } catch {
    throw new BlockedDestinationError('the URL is not valid');
  }
}

/**
 * The host name every check judges. DNS treats `localhost.` and `localhost` as the same name (the
 * trailing dot only says "absolute"), so the dots go before any comparison; a name that becomes
 * numeric without them (`0x7f.1..`) is parsed again by the WHATWG rules so it is judged as the
 * address it is. The URL parser has already lowercased it and mapped `%2E` and `。` to dots.
 */
export function canonicalHostname(url: URL): string {
  const bare = url.hostname.toLowerCase().replace(/\.+$/, '');
  if (bare.startsWith('[')) return bare;
  if (!bare) throw new BlockedDestinationError('the URL has no host');
  try {
    return new URL(`http://${bare}/`).hostname;
  } catch {
    throw new BlockedDestinationError('the URL host is not valid');
  }
}

/**
 * The checks that need no DNS: scheme, user information, host form, and IP literals. Used at
 * registration and again before every attempt. The WHATWG parser has already turned decimal,
 * octal and hex IPv4 spellings (http://2130706433, 0x7f.1) into dotted form here.
 */
export function checkDestinationUrl(text: string, options: GuardOptions): { url: URL; hostname: string; loopback: boolean } {
  const url = parseUrl(text);
  if (url.username || url.password) throw new BlockedDestinationError('the URL must not contain user information');
  if (url.hash) throw new BlockedDestinationError('the URL must not contain a fragment');
  if (!url.hostname) throw new BlockedDestinationError('the URL has no host');
  const hostname = canonicalHostname(url);
  if (isLoopbackAllowance(url, hostname)) {
    if (!options.allowLoopback) throw new BlockedDestinationError(loopbackRefusal(url, hostname));
    if (options.environment !== 'sandbox') throw new BlockedDestinationError('loopback destinations are allowed for sandbox subscriptions only');
    const own = options.servicePorts.find((p) => p.port === Number(url.port));
    if (own) throw new BlockedDestinationError(`port ${own.port} on this machine is the service's own ${own.role}; the loopback allowance covers other local ports only`);
    return { url, hostname, loopback: true };
  }
  if (url.protocol !== 'https:') throw new BlockedDestinationError('the URL must use https');
  const literal = ipLiteral(hostname);
  if (literal) {
    const reason = blockedReason(literal);
    if (reason) throw new BlockedDestinationError(`the destination is not public: ${reason}`);
  } else if (isNonPublicName(hostname)) {
    throw new BlockedDestinationError(`${hostname} is not a public host name`);
  }
  return { url, hostname, loopback: false };
}

/**
 * Why a loopback URL is refused, and what to do instead. A partner cannot restart the service (nor
 * should a shared one allow loopback): `lop listen` reads the event stream and forwards it, signed,
 * to a handler on their own machine, with nothing to change on the service (docs/cli.md). The
 * operators' setting comes second, for whoever runs the service on their own machine. The query is
 * left out: it may hold a token.
 */
function loopbackRefusal(url: URL, hostname: string): string {
  return (
    `${hostname} is a loopback destination: it names the service's own machine, not yours. To receive webhooks on a local handler, ` +
    `run \`lop listen --forward-to ${url.origin}${url.pathname}\` instead: it forwards your event stream as signed deliveries, with no restart and no change to the service. ` +
    '(Operators running the service on their own machine may allow loopback destinations for sandbox with PARTNER_WEBHOOKS_ALLOW_LOOPBACK=true.)'
  );
}

/** Exactly the development allowance: 127.0.0.1 or localhost with an explicit port. */
function isLoopbackAllowance(url: URL, hostname: string): boolean {
  return (url.protocol === 'http:' || url.protocol === 'https:') && LOOPBACK_NAMES.has(hostname) && url.port !== '';
}

/**
 * Resolves and vets the destination for one attempt. Throws BlockedDestinationError when any
 * resolved address is not public; never opens a connection.
 */
export async function vetDestination(text: string, options: GuardOptions, resolve: Resolver = systemResolver): Promise<VettedDestination> {
  const { url, hostname, loopback } = checkDestinationUrl(text, options);
  const protocol = url.protocol as 'https:' | 'http:';
  const port = url.port ? Number(url.port) : protocol === 'https:' ? 443 : 80;
  // The allowance pins localhost to 127.0.0.1 without asking DNS what "localhost" means.
  if (loopback) return { url, hostname, address: '127.0.0.1', family: 4, port, protocol, loopback };

  const literal = ipLiteral(hostname);
  const addresses = literal ? [literal] : await resolve(hostname);
  if (addresses.length === 0) throw new BlockedDestinationError(`${hostname} did not resolve to any address`);
  for (const address of addresses) {
    const reason = blockedReason(address);
    if (reason) throw new BlockedDestinationError(`${hostname} resolves to a non-public address: ${reason}`);
  }
  let address = ipaddr.parse(addresses[0]);
  if (address.kind() === 'ipv6' && (address as ipaddr.IPv6).isIPv4MappedAddress()) address = (address as ipaddr.IPv6).toIPv4Address();
  return { url, hostname, address: address.toString(), family: address.kind() === 'ipv4' ? 4 : 6, port, protocol, loopback };
}
