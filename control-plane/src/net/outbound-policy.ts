import { lookup as dnsLookup, type LookupAddress, type LookupOptions } from 'node:dns';
import { Agent as HttpAgent } from 'node:http';
import { Agent as HttpsAgent } from 'node:https';
import { BlockList, isIP } from 'node:net';
import { embeddedIPv4, specialRangeOf } from './address-ranges.ts';

/**
 * Why a download from a user-given URL did not happen, in words safe to show that user: a refusal is
 * decided before any connection, and nothing a server sent back is quoted, so the text cannot be used
 * to read or port-scan internal services.
 */
export class OutboundError extends Error {
  /** refused: by the rules, before connecting; failed: no usable response; too-large: over the byte cap. */
  readonly kind: 'refused' | 'failed' | 'too-large';
  /** The HTTP status of a response that was not used (failed); the status only, never what the server said. */
  readonly status: number | undefined;

  constructor(message: string, kind: OutboundError['kind'], status?: number) {
    super(message);
    this.kind = kind;
    this.status = status;
  }
}

type LookupCallback = (error: Error | null, address: string | LookupAddress[], family?: number) => void;

/**
 * Which addresses the appliance may download from: public unicast addresses, plus the networks and host
 * names the operator allows (OUTBOUND_ALLOWED_NETWORKS) for sources on the premises. Its agents connect
 * only to addresses it has checked: the check runs in the connection's own DNS lookup, so a name cannot
 * resolve to one address for the check and another for the connection.
 */
export class OutboundPolicy {
  private readonly networks = new BlockList();
  private readonly hosts = new Set<string>();
  readonly agents: { http: HttpAgent; https: HttpsAgent };

  /** `allowed`: CIDRs (`10.1.0.0/16`), single addresses, or host names. */
  constructor(allowed: readonly string[] = []) {
    for (const entry of allowed) {
      const [network, bits] = entry.split('/');
      const family = isIP(network);
      if (family === 0) this.hosts.add(hostKey(entry));
      else
        this.networks.addSubnet(
          network,
          bits === undefined ? (family === 4 ? 32 : 128) : Number(bits),
          family === 4 ? 'ipv4' : 'ipv6',
        );
    }
    // Separate agents per policy: a kept-alive socket is only reused under the rules that checked it.
    this.agents = {
      http: new HttpAgent({ keepAlive: true, lookup: this.lookup }),
      https: new HttpsAgent({ keepAlive: true, lookup: this.lookup }),
    };
  }

  /** Why `address` (what `hostname` resolved to, or the literal itself) may not be used; null when it may. */
  refusal(hostname: string, address: string): string | null {
    if (this.hosts.has(hostKey(hostname)) || this.allowsNetwork(address)) return null;
    const range = specialRangeOf(address);
    if (!range) return null;
    return isIP(hostname.replace(/^\[|\]$/g, ''))
      ? `${hostname} is not a public address (${range})`
      : `${hostname} resolves to a non-public address (${range})`;
  }

  private allowsNetwork(address: string): boolean {
    const family = isIP(address);
    if (family === 0) return false;
    if (this.networks.check(address, family === 4 ? 'ipv4' : 'ipv6')) return true;
    const carried = embeddedIPv4(address);
    return carried !== undefined && this.networks.check(carried, 'ipv4');
  }

  /** net's `lookup`: every address the name resolves to is checked; one refused address refuses the name. */
  private readonly lookup = (hostname: string, options: LookupOptions, callback: LookupCallback): void => {
    dnsLookup(hostname, { family: options.family, hints: options.hints, all: true }, (error, addresses) => {
      if (error) return callback(error, []);
      if (addresses.length === 0)
        return callback(Object.assign(new Error(`${hostname} has no address`), { code: 'ENOTFOUND' }), []);
      const refused = addresses.map(({ address }) => this.refusal(hostname, address)).find((reason) => reason !== null);
      if (refused) return callback(new OutboundError(refused, 'refused'), []);
      if (options.all) return callback(null, addresses);
      callback(null, addresses[0].address, addresses[0].family);
    });
  };
}

function hostKey(hostname: string): string {
  return hostname.toLowerCase().replace(/\.$/, '');
}
