import { describe, expect, it } from 'vitest';
import { loadConfig } from '../config/config';
import { servicePorts, webhookSettings } from './settings';

const portsOf = (env: Record<string, string>, databaseUrl?: string) => servicePorts(loadConfig(env), databaseUrl).map((p) => p.port);

describe("the service's own ports (refused by the loopback allowance)", () => {
  it('are the API, metrics and embedded PostgreSQL ports by default', () => {
    expect(servicePorts(loadConfig({}))).toEqual([
      { port: 3000, role: 'partner API (PORT)' },
      { port: 9464, role: 'metrics endpoint (PARTNER_METRICS_PORT)' },
      { port: 54329, role: 'embedded PostgreSQL (PARTNER_EMBEDDED_PG_PORT)' },
    ]);
  });

  it('follow the configuration, leave out ports that are off (0), and include the worker metrics port when on', () => {
    expect(portsOf({ PORT: '8080', PARTNER_METRICS_PORT: '0', PARTNER_WORKER_METRICS_PORT: '9465', PARTNER_EMBEDDED_PG_PORT: '6543' })).toEqual([8080, 9465, 6543]);
    expect(portsOf({ PORT: '0', PARTNER_METRICS_PORT: '0' })).toEqual([54329]);
  });

  it("include DATABASE_URL's port when its host is this machine, 5432 when it names none", () => {
    expect(portsOf({ DATABASE_URL: 'postgres://postgres@127.0.0.1:5433/db' })).toContain(5433);
    expect(portsOf({ DATABASE_URL: 'postgres://u:p@localhost/db' })).toContain(5432);
    expect(portsOf({ DATABASE_URL: 'postgresql://[::1]:6000/db' })).toContain(6000);
    expect(portsOf({ DATABASE_URL: 'postgres://db.internal.example:5433,127.0.0.1:5444/db' })).toEqual([3000, 9464, 54329, 5444]);
    expect(portsOf({ DATABASE_URL: 'postgres://db.internal.example:5433/db' })).toEqual([3000, 9464, 54329]);
  });

  it('include the database the process really uses (the embedded server) and list each port once', () => {
    expect(portsOf({}, 'postgres://postgres@127.0.0.1:54400/postgres')).toEqual([3000, 9464, 54329, 54400]);
    expect(portsOf({ PORT: '9464' })).toEqual([9464, 54329]);
  });

  it('reach registration and delivery through webhookSettings', () => {
    const settings = webhookSettings(loadConfig({ PARTNER_WEBHOOKS_ALLOW_LOOPBACK: 'true', PORT: '4100' }));
    expect(settings.destination.allowLoopback).toBe(true);
    expect(settings.destination.servicePorts.map((p) => p.port)).toContain(4100);
  });
});
