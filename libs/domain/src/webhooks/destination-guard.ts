import { lookup } from 'node:dns/promises';
import ipaddr from 'ipaddr.js';
import type { Environment } from '../auth/scopes';

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

export interface GuardOptions {
  environment: Environment;
  /** PARTNER_WEBHOOKS_ALLOW_LOOPBACK: http(s)://127.0.0.1:<port> and localhost:<port>, sandbox only. */
  allowLoopback: boolean;
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
 * The checks that need no DNS: scheme, user information, host form, and IP literals. Used at
 * registration and again before every attempt. The WHATWG parser has already turned decimal,
 * octal and hex IPv4 spellings (http://2130706433, 0x7f.1) into dotted form here.
 */
export function checkDestinationUrl(text: string, options: GuardOptions): { url: URL; loopback: boolean } {
  const url = parseUrl(text);
  if (url.username || url.password) throw new BlockedDestinationError('the URL must not contain user information');
  if (url.hash) throw new BlockedDestinationError('the URL must not contain a fragment');
  if (isLoopbackAllowance(url)) {
    if (!options.allowLoopback) throw new BlockedDestinationError(`${url.hostname} is a loopback destination (allowed only with PARTNER_WEBHOOKS_ALLOW_LOOPBACK=true, for sandbox)`);
    if (options.environment !== 'sandbox') throw new BlockedDestinationError('loopback destinations are allowed for sandbox subscriptions only');
    return { url, loopback: true };
  }
  if (url.protocol !== 'https:') throw new BlockedDestinationError('the URL must use https');
  const hostname = url.hostname.toLowerCase();
  if (!hostname) throw new BlockedDestinationError('the URL has no host');
  const literal = ipLiteral(hostname);
  if (literal) {
    const reason = blockedReason(literal);
    if (reason) throw new BlockedDestinationError(`the destination is not public: ${reason}`);
  } else if (hostname === 'localhost' || hostname.endsWith('.localhost') || !hostname.includes('.')) {
    throw new BlockedDestinationError(`${hostname} is not a public host name`);
  }
  return { url, loopback: false };
}

/** Exactly the development allowance: 127.0.0.1 or localhost with an explicit port. */
function isLoopbackAllowance(url: URL): boolean {
  return (url.protocol === 'http:' || url.protocol === 'https:') && LOOPBACK_NAMES.has(url.hostname) && url.port !== '';
}

/**
 * Resolves and vets the destination for one attempt. Throws BlockedDestinationError when any
 * resolved address is not public; never opens a connection.
 */
export async function vetDestination(text: string, options: GuardOptions, resolve: Resolver = systemResolver): Promise<VettedDestination> {
  const { url, loopback } = checkDestinationUrl(text, options);
  const hostname = url.hostname.toLowerCase();
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
