import ipaddr from 'ipaddr.js';

/**
 * Which network addresses an outbound download may reach. A download follows links the
 * media service (or a member) hands us, so by default only public unicast addresses are
 * allowed: never loopback, private (RFC 1918), link-local (cloud metadata at
 * 169.254.169.254), carrier-grade NAT, unique-local, multicast, unspecified, broadcast,
 * documentation or otherwise reserved ranges. ipaddr.js (the address library Fastify's
 * proxy-addr uses) knows the special-purpose registries; what it calls `unicast` is public.
 *
 * The operator can trust more (self-hosted services on a private network or localhost):
 * whole origins (scheme, host and port, checked before any DNS) and CIDRs (checked per
 * resolved address). See `OUTBOUND_ALLOW`.
 */

export type AddressVerdict = { public: true } | { public: false; range: string };

/** An IPv6 address whose last 32 bits are an IPv4 address (NAT64 `64:ff9b::/96`, 6to4 `2002::/16`). */
function embeddedIPv4(v6: ipaddr.IPv6, range: string): ipaddr.IPv4 | undefined {
  const bytes = v6.toByteArray();
  if (range === 'rfc6052' && v6.parts[0] === 0x64 && v6.parts[1] === 0xff9b && v6.parts[2] === 0) {
    return new ipaddr.IPv4(bytes.slice(12, 16));
  }
  // 6to4: 2002:AABB:CCDD::/48 carries the IPv4 address in bytes 2..5.
  if (range === '6to4') return new ipaddr.IPv4(bytes.slice(2, 6));
  return undefined;
}

/** Readable names for ipaddr.js's ranges, for the reasons shown to people. */
const RANGE_NAMES: Record<string, string> = {
  linkLocal: 'link-local',
  uniqueLocal: 'unique-local',
  carrierGradeNat: 'carrier-grade NAT',
  deprecatedSiteLocal: 'site-local',
  rfc6052: 'NAT64',
  rfc6145: 'IPv4-translated',
  ipv4Mapped: 'IPv4-mapped',
};

/** A range as said to a person: `loopback`, `private`, `link-local`, `NAT64 of loopback`… */
export function describeRange(range: string): string {
  return range
    .split(' of ')
    .map((r) => RANGE_NAMES[r] ?? r)
    .join(' of ');
}

/** Classifies one IP address (any notation ipaddr.js parses); anything unparsable is not public. */
export function classifyAddress(ip: string): AddressVerdict {
  let addr: ipaddr.IPv4 | ipaddr.IPv6;
  try {
    // `process` turns an IPv4-mapped IPv6 address (::ffff:127.0.0.1) into its IPv4 address.
    addr = ipaddr.process(ip.replace(/^\[|\]$/g, ''));
  } catch {
    return { public: false, range: 'invalid' };
  }
  if (addr.kind() === 'ipv4') {
    const range = addr.range();
    return range === 'unicast' ? { public: true } : { public: false, range };
  }
  const v6 = addr as ipaddr.IPv6;
  const range = v6.range();
  const inner = embeddedIPv4(v6, range);
  if (inner) {
    const verdict = classifyAddress(inner.toString());
    return verdict.public ? verdict : { public: false, range: `${range} of ${verdict.range}` };
  }
  if (range !== 'unicast') return { public: false, range };
  // Only 2000::/3 is allocated as global unicast; the rest (e.g. the deprecated
  // IPv4-compatible ::a.b.c.d, which some stacks route to IPv4) is reserved.
  return (v6.parts[0] ?? 0) >> 13 === 1 ? { public: true } : { public: false, range: 'reserved' };
}

/** What the operator trusts, as configured (see `parseOutboundAllow` in config). */
export interface OutboundAllowSpec {
  /** `scheme://host[:port]` origins, normalised as `URL.origin`. */
  origins: readonly string[];
  /** `address/bits`, IPv4 or IPv6. */
  cidrs: readonly string[];
}

/** The compiled allow-list a download consults on every hop. */
export interface AllowList {
  /** A URL on a trusted origin is fetched as is (no address check). */
  allowsOrigin(url: URL): boolean;
  /** A resolved address inside a trusted CIDR counts as public. */
  allowsAddress(ip: string): boolean;
}

export function compileAllowList(spec: OutboundAllowSpec): AllowList {
  const origins = new Set(spec.origins.map((o) => new URL(o).origin));
  const cidrs = spec.cidrs.map((c) => ipaddr.parseCIDR(c));
  return {
    allowsOrigin: (url) => origins.has(url.origin),
    allowsAddress: (ip) => {
      let addr: ipaddr.IPv4 | ipaddr.IPv6;
      try {
        addr = ipaddr.parse(ip.replace(/^\[|\]$/g, ''));
      } catch {
        return false;
      }
      // An IPv4-mapped address also matches an IPv4 CIDR (and the other way round).
      const forms = [addr];
      if (addr.kind() === 'ipv6' && (addr as ipaddr.IPv6).isIPv4MappedAddress())
        forms.push((addr as ipaddr.IPv6).toIPv4Address());
      if (addr.kind() === 'ipv4') forms.push((addr as ipaddr.IPv4).toIPv4MappedAddress());
      return cidrs.some(([net, bits]) => forms.some((f) => f.kind() === net.kind() && f.match(net, bits)));
    },
  };
}

/** Nothing trusted beyond public addresses. */
export const NO_EXCEPTIONS: AllowList = compileAllowList({ origins: [], cidrs: [] });
