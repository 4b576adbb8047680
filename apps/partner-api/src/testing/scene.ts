import { afterAll, beforeAll } from 'vitest';
import type { Database, DatabaseConnection, Sql } from '@lop/db';
import { grantPrograms } from '@lop/domain';
import { buildTenant, fixtures, type Fixtures, type Tenant } from '@lop/testing';
import { connectFixtures, startTestApi, type TestApi } from './harness';
import { NO_RATE_LIMIT, ordersClient, startObservedApi, type OrdersClient } from './orders';

/** The API startObservedApi starts: its log in memory, and the protector of its known encryption key. */
export type ObservedApi = Awaited<ReturnType<typeof startObservedApi>>;

/** What Tenant.key takes: scopes, expiry, revocation, and the environment (sandbox unless told). */
export type SceneKeyOptions = Parameters<Tenant['key']>[0];

export interface SceneOptions {
  /** Configuration variables for the API, e.g. PARTNER_DB_LOCK_TIMEOUT_SECONDS. */
  env?: Record<string, string>;
  /**
   * The per-key create limit: `false` lifts it (NO_RATE_LIMIT, for files that create many orders),
   * a number sets it. Unset: the service's default (the observed API lifts it already).
   */
  rateLimit?: false | number;
  /** startObservedApi instead of startTestApi: `api.log` at trace level, `api.protector` to decrypt what was stored. */
  observed?: boolean;
  /** API instances over the same database, started one after the other (`replicas`; `api` is the first). Default 1. */
  replicas?: number;
  /**
   * Whose key the scene makes (implied by `key` and `client`): `'tenant'` a laboratory of its own
   * (buildTenant, `scene.tenant`); `'demo'` a new API client of the demo laboratory granted every demo
   * sandbox program (the seeded catalog, fixtures and scenarios, and a stream of this file's orders only).
   */
  partner?: 'tenant' | 'demo';
  /** A key of the partner (`scene.key`): `true` for every scope in sandbox, or the key's options (a production key, fewer scopes). */
  key?: boolean | SceneKeyOptions;
  /** An orders client of that key (`client`), implying `key`. */
  client?: boolean;
  /** With `client`: a subject it registers (`scene.subject`), unless false (a file whose orders use the sandbox's own subject). */
  subject?: boolean;
}

/** A partner ready to order: a tenant of its own, an orders client of a sandbox key, a registered subject. */
export interface ScenePartner {
  tenant: Tenant;
  client: OrdersClient;
  subject: string;
}

export interface Scene<A extends TestApi = TestApi> {
  /** The fixtures connection, its sql and drizzle handle, and the builders over it: usable at once. */
  readonly connection: DatabaseConnection;
  readonly sql: Sql;
  readonly db: Database;
  readonly fixtures: Fixtures;
  /**
   * Handles filled by the scene's beforeAll: `api`, `replicas`, `tenant` and `client` may be taken
   * apart at once (`const { api, tenant } = scene`) and used from hooks and tests; `key`, `subject`
   * and `clientId` are text, read as `scene.key` where they are used.
   */
  readonly api: A;
  readonly replicas: A[];
  readonly tenant: Tenant;
  readonly client: OrdersClient;
  readonly key: string;
  readonly subject: string;
  /** The API client the scene's key belongs to (the tenant's, or the demo laboratory's new client). */
  readonly clientId: string;
  /** Another partner on `api` (a describe's own tenant), built the way the scene builds its own. */
  freshPartner(): Promise<ScenePartner>;
}

/**
 * One test file's scene: the real partner API (startTestApi, or startObservedApi), a fixtures
 * connection, and as much of a partner as the options ask for — built in a beforeAll this registers,
 * and closed (every API, then the connection) in its afterAll. A file's own beforeAll, registered
 * after this call, runs after the scene is built; its own afterAll runs before the scene closes.
 */
export function useScene<const O extends SceneOptions>(options: O = {} as O): Scene<O['observed'] extends true ? ObservedApi : TestApi> {
  type A = O['observed'] extends true ? ObservedApi : TestApi;
  const connection = connectFixtures();
  const f = fixtures(connection.db);
  const wantsClient = options.client === true;
  const wantsKey = wantsClient || (options.key !== undefined && options.key !== false);
  const partner = options.partner ?? (wantsKey ? 'tenant' : undefined);
  const wantsSubject = wantsClient && options.subject !== false;
  const rateLimit = options.rateLimit === false ? NO_RATE_LIMIT : options.rateLimit === undefined ? {} : { PARTNER_CREATE_ORDER_RATE_LIMIT: String(options.rateLimit) };
  const env = { ...rateLimit, ...options.env };

  const replicas: A[] = [];
  const built: { tenant?: Tenant; clientId?: string; key?: string; client?: OrdersClient; subject?: string } = {};

  const unavailable = (name: string, asked: boolean, option: string): never => {
    throw new Error(
      asked
        ? `scene.${name} is filled in the scene's beforeAll: read it in a hook or a test, not while the file is collected`
        : `this scene was not asked for ${name} (useScene({ ${option} }))`,
    );
  };
  const read = <T>(name: string, value: T | undefined, asked: boolean, option: string): T => (value === undefined ? unavailable(name, asked, option) : value);

  const freshPartner = async (): Promise<ScenePartner> => {
    const tenant = await buildTenant(f);
    const client = ordersClient(replicas[0], await tenant.key());
    return { tenant, client, subject: await client.subject() };
  };

  beforeAll(async () => {
    for (let i = 0; i < (options.replicas ?? 1); i++) replicas.push((options.observed ? await startObservedApi(env) : await startTestApi(env)) as A);
    const keyOptions = typeof options.key === 'object' ? options.key : undefined;
    if (partner === 'tenant') {
      built.tenant = await buildTenant(f);
      built.clientId = built.tenant.clientId;
      if (wantsKey) built.key = await built.tenant.key(keyOptions);
    } else if (partner === 'demo') {
      const demo = await f.demo();
      const created = await f.client(demo.laboratory_id);
      await grantPrograms(connection.db, { clientId: created.client_id, environment: 'sandbox', all: true });
      built.clientId = created.client_id;
      if (wantsKey) built.key = await f.key(created.client_id, keyOptions?.environment ?? 'sandbox', keyOptions);
    }
    if (wantsClient) built.client = ordersClient(replicas[0], built.key!);
    if (wantsSubject) built.subject = await built.client!.subject();
  });
  afterAll(async () => {
    for (const api of replicas) await api.close();
    await connection.close();
  });

  return {
    connection,
    sql: connection.sql,
    db: connection.db,
    fixtures: f,
    api: handle(() => read('api', replicas[0], true, '')),
    replicas: handle(() => read('replicas', replicas.length > 0 ? replicas : undefined, true, '')),
    tenant: handle(() => read('tenant', built.tenant, partner === 'tenant', "partner: 'tenant'")),
    client: handle(() => read('client', built.client, wantsClient, 'client: true')),
    get key() {
      return read('key', built.key, wantsKey, 'key: true');
    },
    get subject() {
      return read('subject', built.subject, wantsSubject, 'client: true');
    },
    get clientId() {
      return read('clientId', built.clientId, partner !== undefined, "partner: 'tenant' or 'demo'");
    },
    freshPartner,
  };
}

/**
 * An object that stands for the one `resolve` returns once the scene is built, so a file can take
 * its handles apart when it is collected. Before that every use throws, saying why.
 */
function handle<T extends object>(resolve: () => T): T {
  return new Proxy({} as T, {
    get(_, property) {
      // Asked by await, inspection and printing, which must not throw on a handle not yet filled.
      if (typeof property === 'symbol' || property === 'then') {
        try {
          return Reflect.get(resolve(), property);
        } catch {
          return undefined;
        }
      }
      const target = resolve();
      const value = Reflect.get(target, property, target);
      return typeof value === 'function' ? value.bind(target) : value;
    },
    has: (_, property) => property in resolve(),
  });
}
