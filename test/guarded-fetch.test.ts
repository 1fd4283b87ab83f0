// Downloads from user-given URLs: which addresses count as not public, how the policy refuses them before
// any connection (numeric host forms, names, redirect hops), and how bodies are bounded while they stream.
import type { ServerResponse } from 'node:http';
import t from 'tap';
import { ConfigError, loadConfig } from '@vp/config';
import { specialRangeOf } from '../control-plane/src/net/address-ranges.ts';
import { fetchBytes, guardedFetch, OutboundError, OutboundPolicy } from '../control-plane/src/net/guarded-fetch.ts';
import { startHttpSource } from './helpers/http-source.ts';

const SECRET = 'internal-service-secret-4711';

/** The OutboundError a download ends with (the test fails when it succeeds or fails otherwise). */
async function failure(download: Promise<unknown>): Promise<OutboundError> {
  const error = await download.then(
    () => new Error('the download succeeded'),
    (caught: unknown) => caught,
  );
  if (!(error instanceof OutboundError)) throw error;
  return error;
}

t.test(
  'address classifier: loopback, private, link-local and the other non-public ranges, in every form',
  async (t) => {
    const cases: Array<[string, string | null]> = [
      ['127.0.0.1', 'loopback'],
      ['127.255.0.9', 'loopback'],
      ['::1', 'loopback'],
      ['0.0.0.0', 'unspecified'],
      ['0.1.2.3', 'unspecified'],
      ['::', 'unspecified'],
      ['10.1.2.3', 'private'],
      ['172.16.0.1', 'private'],
      ['172.31.255.255', 'private'],
      ['192.168.1.1', 'private'],
      ['169.254.169.254', 'link-local'],
      ['fe80::1', 'link-local'],
      ['fe80::1%eth0', 'link-local'],
      ['100.64.0.1', 'shared (carrier-grade NAT)'],
      ['100.127.255.255', 'shared (carrier-grade NAT)'],
      ['fc00::1', 'private'],
      ['fd12:3456::1', 'private'],
      ['224.0.0.1', 'multicast'],
      ['239.255.255.250', 'multicast'],
      ['ff02::1', 'multicast'],
      ['255.255.255.255', 'broadcast'],
      ['240.0.0.1', 'reserved'],
      ['198.18.0.1', 'benchmarking'],
      ['198.19.255.255', 'benchmarking'],
      ['192.0.2.1', 'documentation'],
      ['2001:db8::1', 'documentation'],
      ['2001::1', 'reserved'], // Teredo
      ['100::1', 'reserved'],
      // IPv6 forms that carry an IPv4 address are judged by it.
      ['::ffff:127.0.0.1', 'loopback'],
      ['::ffff:7f00:1', 'loopback'],
      ['::ffff:169.254.169.254', 'link-local'],
      ['::127.0.0.1', 'loopback'],
      ['::ffff:0:10.0.0.1', 'private'],
      ['64:ff9b::7f00:1', 'loopback'], // NAT64
      ['64:ff9b::a9fe:a9fe', 'link-local'],
      ['64:ff9b:1::1', 'private'], // local-use NAT64
      ['2002:c0a8:0101::1', 'private'], // 6to4 of 192.168.1.1
      ['2002:7f00:1::1', 'loopback'],
      // Public addresses.
      ['8.8.8.8', null],
      ['172.32.0.1', null],
      ['100.128.0.1', null],
      ['198.20.0.1', null],
      ['::ffff:8.8.8.8', null],
      ['64:ff9b::808:808', null],
      ['2002:808:808::1', null],
      ['2606:4700:4700::1111', null],
      // Not an address at all.
      ['localhost', 'not an IP address'],
      ['0x7f000001', 'not an IP address'],
    ];
    for (const [address, range] of cases) t.equal(specialRangeOf(address), range, address);
  },
);

t.test(
  'refused before connecting: schemes, numeric host forms, names and metadata addresses; the text cannot scan ports',
  async (t) => {
    const secret = await startHttpSource(t, '127.0.0.1', (_req, res) => res.end(SECRET));
    const policy = new OutboundPolicy();
    const refusals = [
      [`data:text/plain,${SECRET}`, /^data: URLs are not downloaded/],
      ['file:///etc/passwd', /^file: URLs are not downloaded/],
      ['ftp://127.0.0.1/x', /^ftp: URLs are not downloaded/],
      [`${secret.origin}/`, /^127\.0\.0\.1 is not a public address \(loopback\)$/],
      [`http://0x7f000001:${secret.port}/`, /^127\.0\.0\.1 is not a public address \(loopback\)$/],
      [`http://2130706433:${secret.port}/`, /loopback/],
      [`http://127.1:${secret.port}/`, /loopback/],
      [`http://[::ffff:127.0.0.1]:${secret.port}/`, /loopback/],
      [`http://localhost:${secret.port}/`, /^localhost resolves to a non-public address \(loopback\)$/],
      ['http://169.254.169.254/latest/meta-data/', /link-local/],
      ['http://10.0.0.1/', /private/],
    ] as const;
    for (const [url, message] of refusals) {
      const error = await failure(fetchBytes(url, { policy, maxBytes: 1024 }));
      t.equal(error.kind, 'refused', url);
      t.match(error.message, message, url);
      t.notMatch(error.message, SECRET);
    }
    t.same(secret.requests, [], 'nothing reached the local service');

    // An open and a closed port read the same: the refusal is decided before any connection.
    const closedPort = await startHttpSource(t, '127.0.0.1', () => undefined).then((source) => source.port + 1);
    const open = await failure(fetchBytes(`${secret.origin}/`, { policy, maxBytes: 1024 }));
    const closed = await failure(fetchBytes(`http://127.0.0.1:${closedPort}/`, { policy, maxBytes: 1024 }));
    t.equal(open.message, closed.message);
  },
);

t.test('an operator allows networks and host names; HTTP errors name the status, never the body', async (t) => {
  const source = await startHttpSource(t, '127.0.0.1', (req, res) => {
    if (req.url === '/missing') res.writeHead(404).end(SECRET);
    else res.end('hello');
  });
  const byNetwork = new OutboundPolicy(['127.0.0.0/30']);
  t.equal((await fetchBytes(`${source.origin}/`, { policy: byNetwork, maxBytes: 1024 })).toString(), 'hello');
  t.equal(
    (await fetchBytes(`http://[::ffff:127.0.0.1]:${source.port}/`, { policy: byNetwork, maxBytes: 1024 })).toString(),
    'hello',
    'the mapped form of an allowed address',
  );
  const byName = new OutboundPolicy(['LOCALHOST']);
  t.equal(
    (await fetchBytes(`http://localhost:${source.port}/`, { policy: byName, maxBytes: 1024 })).toString(),
    'hello',
  );
  t.match(
    await failure(fetchBytes(`${source.origin}/`, { policy: byName, maxBytes: 1024 })),
    { kind: 'refused' },
    'a name allows that name, not its address',
  );
  t.match(
    await failure(fetchBytes(`${source.origin}/`, { policy: new OutboundPolicy(['127.0.0.2']), maxBytes: 1024 })),
    { kind: 'refused' },
  );

  const missing = await failure(fetchBytes(`${source.origin}/missing`, { policy: byNetwork, maxBytes: 1024 }));
  t.match(missing, { kind: 'failed', message: 'HTTP 404' });
  const closedPort = await startHttpSource(t, '127.0.0.1', () => undefined).then((other) => other.port + 1);
  t.match(await failure(fetchBytes(`http://127.0.0.1:${closedPort}/`, { policy: byNetwork, maxBytes: 1024 })), {
    kind: 'failed',
    message: `could not connect to 127.0.0.1:${closedPort}`,
  });
});

t.test('redirects: followed up to 5, every hop checked again', async (t) => {
  const target = await startHttpSource(t, '127.0.0.1', (_req, res) => res.end(SECRET));
  const allowed = await startHttpSource(t, '127.0.0.2', (req, res) => {
    const hops = Number(/^\/hops\/(\d+)$/.exec(req.url ?? '')?.[1] ?? -1);
    if (req.url === '/to-loopback') res.writeHead(302, { location: `${target.origin}/secret` }).end();
    else if (req.url === '/to-numeric')
      res.writeHead(301, { location: `http://0x7f000001:${target.port}/secret` }).end();
    else if (req.url === '/to-data') res.writeHead(307, { location: `data:text/plain,${SECRET}` }).end();
    else if (req.url === '/to-invalid') res.writeHead(302, { location: 'http://[::1' }).end();
    else if (hops > 0) res.writeHead(302, { location: `/hops/${hops - 1}` }).end();
    else res.end('arrived');
  });
  const policy = new OutboundPolicy(['127.0.0.2/32']);
  for (const path of ['/to-loopback', '/to-numeric', '/to-data']) {
    const error = await failure(fetchBytes(`${allowed.origin}${path}`, { policy, maxBytes: 1024 }));
    t.equal(error.kind, 'refused', path);
    t.match(error.message, /^redirected to .*, which is refused: /, path);
  }
  t.same(target.requests, [], 'the loopback target was never contacted');
  t.equal(
    (await fetchBytes(`${allowed.origin}/hops/5`, { policy, maxBytes: 1024 })).toString(),
    'arrived',
    '5 redirects are followed',
  );
  t.match(await failure(fetchBytes(`${allowed.origin}/to-invalid`, { policy, maxBytes: 1024 })), {
    kind: 'failed',
    message: 'redirected to an invalid URL',
  });
  t.match(await failure(fetchBytes(`${allowed.origin}/hops/6`, { policy, maxBytes: 1024 })), {
    kind: 'failed',
    message: 'more than 5 redirects',
  });
});

// A storage key's `.` and `..` segments are part of its name, which URL parsing would resolve (`bucket/../other/key`).
t.test(
  'a path given is sent as it is, . and .. segments included; a redirect hop goes where its URL says',
  async (t) => {
    const source = await startHttpSource(t, '127.0.0.1', (req, res) => {
      if (req.url === '/bucket/../moved') res.writeHead(302, { location: '/a/./b' }).end();
      else res.end(req.url);
    });
    const fetched = (path: string) =>
      fetchBytes(`${source.origin}/not-this`, {
        policy: new OutboundPolicy(['127.0.0.1/32']),
        maxBytes: 1024,
        path,
      }).then(String);
    t.equal(await fetched('/bucket/../other/key?list-type=2'), '/bucket/../other/key?list-type=2');
    t.equal(await fetched('/bucket/a/./%2E%2E/key'), '/bucket/a/./%2E%2E/key');
    t.equal(await fetched('/bucket/../moved'), '/a/b', "the redirect's own URL, resolved");
  },
);

t.test(
  'bodies are capped while they stream: endless chunked bodies stop at maxBytes, announced ones are refused up front',
  async (t) => {
    let written = 0;
    let closed!: () => void;
    const connectionClosed = new Promise<void>((resolve) => (closed = resolve));
    const endless = (res: ServerResponse) => {
      const chunk = Buffer.alloc(64 * 1024, 7);
      res.once('close', closed);
      const pump = () => {
        while (!res.destroyed) {
          written += chunk.length;
          if (!res.write(chunk)) return void res.once('drain', pump);
        }
      };
      pump();
    };
    const source = await startHttpSource(t, '127.0.0.1', (req, res) => {
      if (req.url === '/announced') res.writeHead(200, { 'content-length': String(2 ** 40) }).flushHeaders();
      else endless(res); // no Content-Length: chunked, never ending
    });
    const policy = new OutboundPolicy(['127.0.0.1']);
    const maxBytes = 2 ** 20;
    const error = await failure(fetchBytes(`${source.origin}/endless`, { policy, maxBytes }));
    t.match(error, { kind: 'too-large', message: `larger than ${maxBytes} bytes` });
    await connectionClosed;
    t.ok(
      written < 64 * maxBytes,
      `the server stopped after ${written} bytes: the download was cut, not read to the end`,
    );

    t.match(await failure(guardedFetch(`${source.origin}/announced`, { policy, maxBytes })), {
      kind: 'too-large',
      message: `larger than ${maxBytes} bytes`,
    });
  },
);

t.test('a server that never answers or stalls mid-body fails the download', async (t) => {
  const source = await startHttpSource(t, '127.0.0.1', (req, res) => {
    if (req.url === '/stall') res.writeHead(200).write('partial');
    // '/silent': no answer at all
  });
  const policy = new OutboundPolicy(['127.0.0.1']);
  t.match(await failure(fetchBytes(`${source.origin}/silent`, { policy, maxBytes: 1024, timeoutMs: 200 })), {
    kind: 'failed',
    message: 'no response within 0.2 s',
  });
  t.match(await failure(fetchBytes(`${source.origin}/stall`, { policy, maxBytes: 1024, idleTimeoutMs: 200 })), {
    kind: 'failed',
    message: 'no data for 0.2 s',
  });
});

t.test('OUTBOUND_ALLOWED_NETWORKS: CIDRs, addresses and names; anything else stops start-up', async (t) => {
  t.same(loadConfig({}).outboundAllowedNetworks, [], 'public addresses only by default');
  t.same(
    loadConfig({ OUTBOUND_ALLOWED_NETWORKS: ' 10.20.0.0/16, fd00::/8,192.168.1.5 ,files.corp.internal' })
      .outboundAllowedNetworks,
    ['10.20.0.0/16', 'fd00::/8', '192.168.1.5', 'files.corp.internal'],
  );
  t.throws(
    () => loadConfig({ OUTBOUND_ALLOWED_NETWORKS: '10.0.0.0/33,ok.example,http://x/' }),
    new ConfigError(
      'Invalid configuration: OUTBOUND_ALLOWED_NETWORKS must be comma-separated CIDRs (10.20.0.0/16), addresses or host names; not: 10.0.0.0/33, http://x/',
    ),
  );
});
