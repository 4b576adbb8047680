import http from 'node:http';
import https from 'node:https';
import type { Duplex } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { attemptDelivery, type DeliveryAgents } from './delivery-attempt';
import { BlockedDestinationError, checkDestinationUrl, vetDestination, type Resolver } from './destination-guard';

/** Names a hostile DNS would answer with; anything else does not resolve. */
const DNS: Record<string, string[]> = {
  'internal.partner.example': ['10.0.0.5'],
  'mixed.partner.example': ['93.184.216.34', '10.0.0.1'],
  'mixed6.partner.example': ['2606:4700::1111', 'fd12:3456::1'],
  'metadata.partner.example': ['169.254.169.254'],
  'aws6-metadata.partner.example': ['fd00:ec2::254'],
  'loopback.partner.example': ['127.0.0.1'],
  'loopback6.partner.example': ['::1'],
  'mapped.partner.example': ['::ffff:127.0.0.1'],
  'nat64.partner.example': ['64:ff9b::a00:1'],
  'cgnat.partner.example': ['100.64.12.34'],
  'multicast.partner.example': ['224.0.0.251'],
  'nothing.partner.example': [],
  'public.partner.example': ['93.184.216.34'],
  'public6.partner.example': ['2606:4700::1111'],
};
const hostileResolver: Resolver = async (name) => {
  const answer = DNS[name];
  if (!answer) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${name}`), { code: 'ENOTFOUND' });
  return answer;
};

const HOSTILE: [label: string, url: string][] = [
  ['IPv4 loopback', 'https://127.0.0.1/hook'],
  ['IPv4 loopback, other address', 'https://127.8.9.10/hook'],
  ['IPv6 loopback', 'https://[::1]/hook'],
  ['RFC 1918 10/8', 'https://10.0.0.1/hook'],
  ['RFC 1918 172.16/12', 'https://172.16.5.4/hook'],
  ['RFC 1918 172.16/12 upper end', 'https://172.31.255.255/hook'],
  ['RFC 1918 192.168/16', 'https://192.168.0.1/hook'],
  ['CGNAT 100.64/10', 'https://100.64.0.1/hook'],
  ['CGNAT upper end', 'https://100.127.255.254/hook'],
  ['link-local metadata 169.254.169.254', 'https://169.254.169.254/latest/meta-data/'],
  ['link-local 169.254/16', 'https://169.254.1.1/hook'],
  ['IPv6 link-local', 'https://[fe80::1]/hook'],
  ['IPv6 ULA fc00::/7', 'https://[fc00::1]/hook'],
  ['AWS IPv6 metadata fd00:ec2::254', 'https://[fd00:ec2::254]/latest/meta-data/'],
  ['IPv4-mapped loopback', 'https://[::ffff:127.0.0.1]/hook'],
  ['IPv4-mapped private', 'https://[::ffff:10.0.0.1]/hook'],
  ['IPv4-mapped metadata', 'https://[::ffff:169.254.169.254]/hook'],
  ['NAT64 of loopback', 'https://[64:ff9b::7f00:1]/hook'],
  ['NAT64 of metadata', 'https://[64:ff9b::a9fe:a9fe]/hook'],
  ['local-use NAT64', 'https://[64:ff9b:1::a00:1]/hook'],
  ['6to4 of loopback', 'https://[2002:7f00:1::]/hook'],
  ['Teredo', 'https://[2001:0:4136:e378:8000:63bf:3fff:fdd2]/hook'],
  ['IPv4-compatible IPv6 of loopback', 'https://[::7f00:1]/hook'],
  ['unspecified 0.0.0.0', 'https://0.0.0.0/hook'],
  ['unspecified ::', 'https://[::]/hook'],
  ['multicast 224/4', 'https://224.0.0.1/hook'],
  ['multicast SSDP', 'https://239.255.255.250/hook'],
  ['IPv6 multicast', 'https://[ff02::1]/hook'],
  ['documentation TEST-NET-1', 'https://192.0.2.10/hook'],
  ['documentation TEST-NET-2', 'https://198.51.100.7/hook'],
  ['documentation TEST-NET-3', 'https://203.0.113.9/hook'],
  ['IPv6 documentation 2001:db8::/32', 'https://[2001:db8::1]/hook'],
  ['IPv6 documentation 3fff::/20', 'https://[3fff::1]/hook'],
  ['broadcast', 'https://255.255.255.255/hook'],
  ['reserved 240/4', 'https://240.0.0.1/hook'],
  ['benchmarking 198.18/15', 'https://198.18.0.1/hook'],
  ['decimal IPv4 spelling of 127.0.0.1', 'https://2130706433/hook'],
  ['hex IPv4 spelling', 'https://0x7f000001/hook'],
  ['octal IPv4 spelling', 'https://017700000001/hook'],
  ['mixed hex short form', 'https://0x7f.1/hook'],
  ['short dotted form', 'https://127.1/hook'],
  ['octal dotted form', 'https://0177.0.0.1/hook'],
  ['decimal spelling of 10.0.0.1', 'https://167772161/hook'],
  ['localhost by name', 'https://localhost/hook'],
  ['localhost with a port but no allowance', 'https://localhost:8443/hook'],
  ['a *.localhost name', 'https://api.localhost/hook'],
  ['a single-label name', 'https://intranet/hook'],
  ['a name resolving to RFC 1918', 'https://internal.partner.example/hook'],
  ['a name resolving to a public AND a private address', 'https://mixed.partner.example/hook'],
  ['an IPv6 name resolving to a public AND a ULA address', 'https://mixed6.partner.example/hook'],
  ['a name resolving to the metadata address', 'https://metadata.partner.example/hook'],
  ['a name resolving to the AWS IPv6 metadata address', 'https://aws6-metadata.partner.example/hook'],
  ['a name resolving to loopback', 'https://loopback.partner.example/hook'],
  ['a name resolving to IPv6 loopback', 'https://loopback6.partner.example/hook'],
  ['a name resolving to IPv4-mapped loopback', 'https://mapped.partner.example/hook'],
  ['a name resolving to NAT64 of a private address', 'https://nat64.partner.example/hook'],
  ['a name resolving to CGNAT', 'https://cgnat.partner.example/hook'],
  ['a name resolving to multicast', 'https://multicast.partner.example/hook'],
  ['a name resolving to nothing', 'https://nothing.partner.example/hook'],
  ['plain http', 'http://public.partner.example/hook'],
  ['user information', 'https://user:pass@public.partner.example/hook'],
  ['user name only', 'https://user@public.partner.example/hook'],
  ['another scheme', 'ftp://public.partner.example/hook'],
  // A trailing dot only says "absolute name": the same host to DNS, so the same refusal.
  ['localhost with a trailing dot', 'https://localhost./hook'],
  ['localhost with two trailing dots, uppercase', 'https://LOCALHOST../hook'],
  ['localhost with a percent-encoded dot', 'https://localhost%2E/hook'],
  ['localhost with an ideographic full stop', 'https://localhost\u3002/hook'],
  ['a *.localhost name with a trailing dot', 'https://api.localhost./hook'],
  ['a single-label name with a trailing dot', 'https://intranet./hook'],
  ['IPv4 loopback with a trailing dot', 'https://127.0.0.1./hook'],
  ['IPv4 loopback with two trailing dots', 'https://127.0.0.1../hook'],
  ['hex short form with two trailing dots', 'https://0x7f.1../hook'],
  ['a name resolving to RFC 1918, with a trailing dot', 'https://internal.partner.example./hook'],
  ['a private-use .internal name', 'https://foo.internal/hook'],
  ['a private-use .internal name with a trailing dot', 'https://foo.internal./hook'],
  ['an mDNS .local name', 'https://printer.local/hook'],
  ['a .home.arpa name with a trailing dot', 'https://router.home.arpa./hook'],
  ['localhost with a trailing dot and a port but no allowance', 'http://localhost.:4567/hook'],
];

/** Agents that count every connection they are asked to open. */
function countingAgents() {
  let connections = 0;
  class CountingHttp extends http.Agent {
    override createConnection(...args: Parameters<http.Agent['createConnection']>): Duplex {
      connections++;
      return super.createConnection(...args) as Duplex;
    }
  }
  class CountingHttps extends https.Agent {
    override createConnection(...args: Parameters<http.Agent['createConnection']>): Duplex {
      connections++;
      return (super.createConnection as (...a: unknown[]) => Duplex)(...args);
    }
  }
  const agents: DeliveryAgents = { http: new CountingHttp(), https: new CountingHttps(), destroy: () => undefined };
  return { agents, connections: () => connections };
}

describe('destination guard', () => {
  it('has at least 40 hostile destinations in its table', () => {
    expect(HOSTILE.length).toBeGreaterThanOrEqual(40);
  });

  it.each(HOSTILE)('refuses %s (%s) before any connection', async (_label, url) => {
    const counting = countingAgents();
    await expect(vetDestination(url, { environment: 'sandbox', allowLoopback: false, servicePorts: [] }, hostileResolver)).rejects.toBeInstanceOf(BlockedDestinationError);
    const report = await attemptDelivery(
      { url, environment: 'sandbox', secret: 'whsec_test', body: '{}', deliveryId: '00000000-0000-4000-8000-000000000000', eventId: '00000000-0000-4000-8000-000000000001' },
      { timeoutMs: 2000, allowLoopback: false, servicePorts: [], resolve: hostileResolver, agents: counting.agents },
    );
    expect(report.result).toEqual({ kind: 'blocked_destination' });
    expect(counting.connections()).toBe(0);
  });

  it('accepts public addresses and names whose every answer is public', async () => {
    const options = { environment: 'production' as const, allowLoopback: false, servicePorts: [] };
    await expect(vetDestination('https://public.partner.example/hooks?x=1', options, hostileResolver)).resolves.toMatchObject({ address: '93.184.216.34', family: 4, port: 443, hostname: 'public.partner.example' });
    await expect(vetDestination('https://public6.partner.example:8443/', options, hostileResolver)).resolves.toMatchObject({ address: '2606:4700::1111', family: 6, port: 8443 });
    await expect(vetDestination('https://8.8.8.8/', options, hostileResolver)).resolves.toMatchObject({ address: '8.8.8.8' });
    await expect(vetDestination('https://[::ffff:8.8.8.8]/', options, hostileResolver)).resolves.toMatchObject({ address: '8.8.8.8', family: 4 });
  });

  it('re-resolves at every attempt: a name that turns private after registration is refused then', async () => {
    let answers = [['93.184.216.34'], ['10.1.2.3']];
    const rebinding: Resolver = async () => answers.shift() ?? [];
    const options = { environment: 'production' as const, allowLoopback: false, servicePorts: [] };
    await expect(vetDestination('https://rebind.partner.example/', options, rebinding)).resolves.toMatchObject({ address: '93.184.216.34' });
    await expect(vetDestination('https://rebind.partner.example/', options, rebinding)).rejects.toThrow(/non-public address: 10\.1\.2\.3 is a private address/);
    answers = [];
  });

  describe('the loopback allowance (PARTNER_WEBHOOKS_ALLOW_LOOPBACK)', () => {
    const on = { environment: 'sandbox' as const, allowLoopback: true, servicePorts: [] };
    it('permits http://127.0.0.1:<port> and http://localhost:<port> for sandbox, pinned to 127.0.0.1', async () => {
      await expect(vetDestination('http://127.0.0.1:4567/hook', on)).resolves.toMatchObject({ address: '127.0.0.1', port: 4567, loopback: true, protocol: 'http:' });
      await expect(vetDestination('http://localhost:4567/hook', on)).resolves.toMatchObject({ address: '127.0.0.1', port: 4567, loopback: true });
    });
    it('without it, a loopback URL is refused with `lop listen` to run instead (no restart), and the operators\' setting second', () => {
      for (const url of ['http://localhost:4000/hooks?token=abc', 'http://127.0.0.1:4000/hooks']) {
        let message = '';
        try {
          checkDestinationUrl(url, { environment: 'sandbox', allowLoopback: false, servicePorts: [] });
        } catch (error) {
          message = (error as Error).message;
        }
        const forwardTo = url.replace(/\?.*$/, '');
        expect(message, url).toContain(`run \`lop listen --forward-to ${forwardTo}\` instead`);
        expect(message, url).toContain('no restart');
        // The flag is for whoever runs the service, after the partner's way; the query (it may hold a token) is not repeated.
        expect(message.indexOf('PARTNER_WEBHOOKS_ALLOW_LOOPBACK=true'), url).toBeGreaterThan(message.indexOf('lop listen'));
        expect(message, url).not.toContain('token=abc');
      }
    });
    it('refuses loopback for production subscriptions even when allowed', () => {
      expect(() => checkDestinationUrl('http://127.0.0.1:4567/hook', { environment: 'production', allowLoopback: true, servicePorts: [] })).toThrow(/sandbox subscriptions only/);
    });
    it('covers only the two loopback forms with a port, nothing else', () => {
      for (const url of ['http://10.0.0.1:8080/', 'http://127.0.0.2:8080/', 'http://[::1]:8080/', 'http://127.0.0.1/', 'http://public.partner.example:8080/']) {
        expect(() => checkDestinationUrl(url, on), url).toThrow(BlockedDestinationError);
      }
    });
    it('still refuses user information', () => {
      expect(() => checkDestinationUrl('http://me:pw@127.0.0.1:4567/', on)).toThrow(/user information/);
    });
    it('treats localhost with a trailing dot as localhost: the same allowance, pinned to 127.0.0.1', async () => {
      await expect(vetDestination('http://localhost.:4567/hook', on)).resolves.toMatchObject({ address: '127.0.0.1', hostname: 'localhost', loopback: true });
      await expect(vetDestination('http://LOCALHOST..:4567/hook', on)).resolves.toMatchObject({ address: '127.0.0.1', loopback: true });
    });

    describe("never the service's own ports", () => {
      const own = {
        ...on,
        servicePorts: [
          { port: 3000, role: 'partner API (PORT)' },
          { port: 9464, role: 'metrics endpoint (PARTNER_METRICS_PORT)' },
          { port: 54329, role: 'embedded PostgreSQL (PARTNER_EMBEDDED_PG_PORT)' },
          { port: 5432, role: 'database (DATABASE_URL)' },
        ],
      };
      it.each([
        ['http://127.0.0.1:3000/hook', /port 3000 on this machine is the service's own partner API \(PORT\)/],
        ['https://localhost:3000/hook', /own partner API/],
        ['http://localhost.:9464/metrics', /own metrics endpoint \(PARTNER_METRICS_PORT\)/],
        ['http://127.0.0.1:54329/', /own embedded PostgreSQL \(PARTNER_EMBEDDED_PG_PORT\)/],
        ['http://LOCALHOST:5432/', /own database \(DATABASE_URL\)/],
      ])('refuses %s at registration and at the attempt, without connecting', async (url, reason) => {
        expect(() => checkDestinationUrl(url, own)).toThrow(reason);
        await expect(vetDestination(url, own)).rejects.toThrow(reason);
        const counting = countingAgents();
        const report = await attemptDelivery(
          { url, environment: 'sandbox', secret: 'whsec_test', body: '{}', deliveryId: '00000000-0000-4000-8000-000000000000', eventId: '00000000-0000-4000-8000-000000000001' },
          { timeoutMs: 2000, ...own, agents: counting.agents },
        );
        expect(report).toMatchObject({ result: { kind: 'blocked_destination' }, detail: expect.stringMatching(reason) });
        expect(counting.connections()).toBe(0);
      });
      it('still allows every other local port', async () => {
        await expect(vetDestination('http://127.0.0.1:3001/hook', own)).resolves.toMatchObject({ port: 3001, loopback: true });
      });
    });
  });
});

describe('pinned connection', () => {
  let server: https.Server;
  let port: number;
  const seen: { host?: string; servername?: string | false | null }[] = [];

  beforeAll(async () => {
    const { key, cert } = await selfSignedCertificate('hooks.partner.example');
    server = https.createServer({ key, cert }, (req, res) => {
      seen.push({ host: req.headers.host, servername: (req.socket as import('node:tls').TLSSocket).servername });
      req.resume();
      req.on('end', () => res.writeHead(204).end());
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as import('node:net').AddressInfo).port;
    certificate = cert;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));
  let certificate: string;

  it('connects to the vetted address with the registered name for TLS SNI, certificate check and Host, without resolving it', async () => {
    const { postToVettedDestination, createDeliveryAgents } = await import('./delivery-attempt');
    const agents = createDeliveryAgents({ ca: certificate });
    const url = new URL(`https://hooks.partner.example:${port}/in?x=1`);
    // hooks.partner.example resolves nowhere: only the pinned address can reach the server.
    const response = await postToVettedDestination(
      { url, hostname: url.hostname, address: '127.0.0.1', family: 4, port, protocol: 'https:', loopback: false },
      { 'content-type': 'application/json' },
      '{}',
      new AbortController().signal,
      agents,
    );
    agents.destroy();
    expect(response.status).toBe(204);
    expect(seen.at(-1)).toEqual({ host: `hooks.partner.example:${port}`, servername: 'hooks.partner.example' });
  });
});

async function selfSignedCertificate(name: string): Promise<{ key: string; cert: string }> {
  const { execFileSync } = await import('node:child_process');
  const { mkdtempSync, readFileSync, rmSync } = await import('node:fs');
  const { tmpdir } = await import('node:os');
  const { join } = await import('node:path');
  const dir = mkdtempSync(join(tmpdir(), 'webhook-tls-'));
  try {
    execFileSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-keyout', join(dir, 'key.pem'), '-out', join(dir, 'cert.pem'), '-days', '1', '-subj', `/CN=${name}`, '-addext', `subjectAltName=DNS:${name}`], { stdio: 'ignore' });
    return { key: readFileSync(join(dir, 'key.pem'), 'utf8'), cert: readFileSync(join(dir, 'cert.pem'), 'utf8') };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
