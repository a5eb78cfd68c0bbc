import dns from 'node:dns';
import net from 'node:net';

/**
 * Addresses a webhook may not reach unless the operator allows it (WEBHOOKS_ALLOW_PRIVATE): this
 * host and its network, the cloud's metadata service, and what no public receiver uses. Without
 * the guard, anyone who may add a webhook could make the server call services that trust it.
 */
const RANGES: [label: string, family: 'ipv4' | 'ipv6', network: string, prefix: number][] = [
  ['an unspecified address', 'ipv4', '0.0.0.0', 8],
  ['a private address', 'ipv4', '10.0.0.0', 8],
  ['a shared (carrier-grade NAT) address', 'ipv4', '100.64.0.0', 10],
  ['a loopback address', 'ipv4', '127.0.0.0', 8],
  ['a link-local address (such as the metadata service)', 'ipv4', '169.254.0.0', 16],
  ['a private address', 'ipv4', '172.16.0.0', 12],
  ['a reserved address', 'ipv4', '192.0.0.0', 24],
  ['a documentation address', 'ipv4', '192.0.2.0', 24],
  ['a private address', 'ipv4', '192.168.0.0', 16],
  ['a benchmarking address', 'ipv4', '198.18.0.0', 15],
  ['a documentation address', 'ipv4', '198.51.100.0', 24],
  ['a documentation address', 'ipv4', '203.0.113.0', 24],
  ['a multicast address', 'ipv4', '224.0.0.0', 4],
  ['a reserved address', 'ipv4', '240.0.0.0', 4],
  ['an unspecified address', 'ipv6', '::', 128],
  ['a loopback address', 'ipv6', '::1', 128],
  ['a discard address', 'ipv6', '100::', 64],
  ['a local NAT64 address', 'ipv6', '64:ff9b:1::', 48],
  ['a documentation address', 'ipv6', '2001:db8::', 32],
  ['a private (unique local) address', 'ipv6', 'fc00::', 7],
  ['a link-local address', 'ipv6', 'fe80::', 10],
  ['a multicast address', 'ipv6', 'ff00::', 8],
];

/** One list per label; an IPv4-mapped IPv6 address (::ffff:127.0.0.1) is checked as the IPv4 one. */
const LISTS = RANGES.map(([label, family, network, prefix]) => {
  const list = new net.BlockList();
  list.addSubnet(network, prefix, family);
  return { label, list };
});

/** What kind of address this is when webhooks may not go there (`a loopback address`), else undefined. */
export function forbiddenRange(address: string): string | undefined {
  const family = net.isIP(address);
  if (family === 0) return 'not an IP address';
  const type = family === 4 ? 'ipv4' : 'ipv6';
  return LISTS.find(({ list }) => list.check(address, type))?.label;
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
