import { isIPv4, isIPv6 } from 'node:net';

/**
 * Which special-purpose range an IP address lies in (loopback, private, link-local, ...), or null for a
 * public unicast address. IPv6 forms that carry an IPv4 address (mapped, compatible, SIIT, NAT64, 6to4)
 * are judged by that IPv4 address, so `::ffff:127.0.0.1` is loopback. Anything that is not an IP address
 * is 'not an IP address'.
 */
export function specialRangeOf(address: string): string | null {
  const unzoned = address.replace(/%.*$/, '');
  if (isIPv4(unzoned)) return rangeOfIPv4(ipv4Number(unzoned));
  if (isIPv6(unzoned)) return rangeOfIPv6(ipv6Groups(unzoned));
  return 'not an IP address';
}

/** The IPv4 address an IPv6 address carries (mapped, compatible, SIIT, NAT64, 6to4), dotted; else undefined. */
export function embeddedIPv4(address: string): string | undefined {
  const unzoned = address.replace(/%.*$/, '');
  if (!isIPv6(unzoned)) return undefined;
  const embedded = embeddedIPv4Number(ipv6Groups(unzoned));
  return embedded === undefined ? undefined : [24, 16, 8, 0].map((shift) => (embedded >>> shift) & 0xff).join('.');
}

/** IANA's special-purpose IPv4 ranges (RFC 6890 and successors), first match wins. */
const IPV4_RANGES: Array<[cidr: string, range: string]> = [
  ['0.0.0.0/8', 'unspecified'],
  ['10.0.0.0/8', 'private'],
  ['100.64.0.0/10', 'shared (carrier-grade NAT)'],
  ['127.0.0.0/8', 'loopback'],
  ['169.254.0.0/16', 'link-local'],
  ['172.16.0.0/12', 'private'],
  ['192.0.0.0/24', 'reserved'],
  ['192.0.2.0/24', 'documentation'],
  ['192.88.99.0/24', 'reserved'],
  ['192.168.0.0/16', 'private'],
  ['198.18.0.0/15', 'benchmarking'],
  ['198.51.100.0/24', 'documentation'],
  ['203.0.113.0/24', 'documentation'],
  ['224.0.0.0/4', 'multicast'],
  ['255.255.255.255/32', 'broadcast'],
  ['240.0.0.0/4', 'reserved'],
];

const IPV4_TABLE = IPV4_RANGES.map(([cidr, range]) => {
  const [base, bits] = cidr.split('/');
  const mask = Number(bits) === 0 ? 0 : (~0 << (32 - Number(bits))) >>> 0;
  return { base: (ipv4Number(base) & mask) >>> 0, mask, range };
});

function ipv4Number(dotted: string): number {
  return dotted.split('.').reduce((value, octet) => value * 256 + Number(octet), 0);
}

function rangeOfIPv4(value: number): string | null {
  return IPV4_TABLE.find(({ base, mask }) => (value & mask) >>> 0 === base)?.range ?? null;
}

/** The eight 16-bit groups of a valid IPv6 address (`::` expanded, a trailing dotted quad folded in). */
function ipv6Groups(address: string): number[] {
  let text = address.toLowerCase();
  const quad = /(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  if (quad) {
    const value = ipv4Number(quad[1]);
    text = `${text.slice(0, -quad[1].length)}${(value >>> 16).toString(16)}:${(value & 0xffff).toString(16)}`;
  }
  const [head, tail] = text.split('::');
  const parse = (part: string | undefined) => (part ? part.split(':').map((group) => parseInt(group, 16)) : []);
  const front = parse(head);
  const back = parse(tail);
  return tail === undefined ? front : [...front, ...Array<number>(8 - front.length - back.length).fill(0), ...back];
}

/** Whether the first `bits` bits of `groups` equal those of `prefix` (groups given as numbers). */
function inPrefix(groups: number[], prefix: number[], bits: number): boolean {
  for (let i = 0; i * 16 < bits; i += 1) {
    const take = Math.min(16, bits - i * 16);
    const mask = (0xffff << (16 - take)) & 0xffff;
    if ((groups[i] & mask) !== ((prefix[i] ?? 0) & mask)) return false;
  }
  return true;
}

function embeddedIPv4Number(groups: number[]): number | undefined {
  const low32 = ((groups[6] << 16) | groups[7]) >>> 0;
  if (inPrefix(groups, [0, 0, 0, 0, 0, 0xffff], 96)) return low32; // ::ffff:a.b.c.d, mapped
  if (inPrefix(groups, [0, 0, 0, 0, 0xffff, 0], 96)) return low32; // ::ffff:0:a.b.c.d, SIIT
  if (inPrefix(groups, [0x64, 0xff9b], 96)) return low32; // 64:ff9b::a.b.c.d, NAT64
  if (inPrefix(groups, [0x2002], 16)) return ((groups[1] << 16) | groups[2]) >>> 0; // 6to4
  // ::a.b.c.d, the deprecated compatible form (:: and ::1 themselves are ranges of their own)
  if (inPrefix(groups, [], 96) && low32 > 1) return low32;
  return undefined;
}

/** IANA's special-purpose IPv6 ranges that carry no IPv4 address; first match wins. */
const IPV6_RANGES: Array<[prefix: number[], bits: number, range: string]> = [
  [[], 128, 'unspecified'],
  [[0, 0, 0, 0, 0, 0, 0, 1], 128, 'loopback'],
  [[0x64, 0xff9b, 1], 48, 'private'], // local-use NAT64
  [[0x100], 64, 'reserved'], // discard-only
  [[0x2001, 0xdb8], 32, 'documentation'],
  [[0x2001], 23, 'reserved'], // IETF protocol assignments: Teredo, benchmarking, ORCHID
  [[0x3fff], 20, 'documentation'],
  [[0xfc00], 7, 'private'], // unique-local
  [[0xfe80], 10, 'link-local'],
  [[0xfec0], 10, 'private'], // site-local, deprecated
  [[0xff00], 8, 'multicast'],
];

function rangeOfIPv6(groups: number[]): string | null {
  const named = IPV6_RANGES.find(([prefix, bits]) => inPrefix(groups, prefix, bits));
  if (named) return named[2];
  const embedded = embeddedIPv4Number(groups);
  if (embedded !== undefined) return rangeOfIPv4(embedded);
  // Only 2000::/3 is allocated for global unicast.
  return inPrefix(groups, [0x2000], 3) ? null : 'reserved';
}
