import dns from 'node:dns';
import net from 'node:net';
import ipaddr from 'ipaddr.js';

/**
 * Webhooks may reach global unicast addresses only, unless the operator allows the rest
 * (WEBHOOKS_ALLOW_PRIVATE): without the guard, anyone who may add a webhook could make the server
 * call this host, its network, the cloud's metadata service, or them again through an IPv6 form
 * that embeds an IPv4 address (NAT64, 6to4, Teredo, IPv4-mapped and -compatible). What an
 * address is, is ipaddr.js's judgement (it follows IANA's special-purpose registries); an IPv6
 * address must also lie in 2000::/3, the only block IANA allocates global unicast from, which
 * leaves out the deprecated forms it still calls unicast (`::127.0.0.1`).
 */
const LABELS: Record<string, string> = {
  unspecified: 'an unspecified address',
  broadcast: 'a broadcast address',
  multicast: 'a multicast address',
  linkLocal: 'a link-local address (such as the metadata service)',
  loopback: 'a loopback address',
  carrierGradeNat: 'a shared (carrier-grade NAT) address',
  private: 'a private address',
  reserved: 'a reserved address',
  uniqueLocal: 'a private (unique local) address',
  ipv4Mapped: 'an IPv4-mapped address',
  rfc6145: 'an IPv4-translated address',
  rfc6052: 'a NAT64 address (it embeds an IPv4 address)',
  '6to4': 'a 6to4 address (it embeds an IPv4 address)',
  teredo: 'a Teredo address (it embeds an IPv4 address)',
  deprecatedSiteLocal: 'a site-local address',
  discard: 'a discard address',
};

/** 2000::/3: IPv6 global unicast. */
const GLOBAL_UNICAST_V6 = ipaddr.parseCIDR('2000::/3');

/** What kind of address this is when webhooks may not go there (`a loopback address`), else undefined. */
export function forbiddenRange(address: string): string | undefined {
  // Strictly an address: ipaddr.js alone would read `1.2.3` as one.
  if (net.isIP(address) === 0) return 'not an IP address';
  const parsed = ipaddr.parse(address);
  const range = parsed.range();
  if (range !== 'unicast') return LABELS[range] ?? `not a global unicast address (${range})`;
  if (parsed.kind() === 'ipv6' && !parsed.match(GLOBAL_UNICAST_V6)) return 'not a global unicast address';
  return undefined;
}

/** Raised when a target is, or resolves to, an address webhooks may not reach. */
export class ForbiddenTargetError extends Error {
  readonly code = 'EFORBIDDENTARGET';
}

const hostOf = (url: URL): string => url.hostname.replace(/^\[(.*)\]$/, '$1');

/**
 * Checks where a webhook URL leads, as it is added: its host, or every address its name resolves
 * to now, must be public. Throws ForbiddenTargetError saying which address is not; a name that
 * does not resolve is refused too (a typo would fail every delivery).
 */
export async function checkTarget(url: URL, allowPrivate: boolean): Promise<void> {
  if (allowPrivate || checkLiteralHost(url, allowPrivate)) return;
  const host = hostOf(url);
  let addresses: dns.LookupAddress[];
  try {
    addresses = await dns.promises.lookup(host, { all: true });
  } catch {
    throw new ForbiddenTargetError(`${host} does not resolve to an address`);
  }
  for (const { address } of addresses) refuseIfForbidden(host, address);
}

/**
 * A host that is an IP address is checked here (no lookup sees it); true when it was one, and
 * allowed. Throws ForbiddenTargetError for a forbidden one.
 */
export function checkLiteralHost(url: URL, allowPrivate: boolean): boolean {
  const host = hostOf(url);
  if (!net.isIP(host)) return false;
  if (!allowPrivate) refuseIfForbidden(host, host);
  return true;
}

function refuseIfForbidden(host: string, address: string): void {
  const range = forbiddenRange(address);
  if (range === undefined) return;
  throw new ForbiddenTargetError(host === address ? `${host} is ${range}` : `${host} resolves to ${address}, ${range}`);
}

/**
 * The `lookup` of the agents deliveries go through: the host name is resolved once, every address
 * is checked, and the connection is made to the addresses checked (never resolved again), so a
 * name that turns private after the webhook was added (DNS rebinding) is refused at delivery.
 * Host names that are IP addresses skip lookup: deliveries check those with checkTarget.
 */
export function guardedLookup(allowPrivate: boolean): net.LookupFunction {
  return (hostname, options, callback) => {
    dns.lookup(hostname, { ...options, all: true }, (err, addresses) => {
      if (err) return callback(err, '', 0);
      if (!allowPrivate) {
        try {
          for (const { address } of addresses) refuseIfForbidden(hostname, address);
        } catch (refused) {
          return callback(refused as NodeJS.ErrnoException, '', 0);
        }
      }
      if (options.all) return (callback as unknown as (e: null, all: dns.LookupAddress[]) => void)(null, addresses);
      return callback(null, addresses[0].address, addresses[0].family);
    });
  };
}
