import { join } from 'node:path';
import { ensureEmbeddedPostgres } from './embedded';

export interface DatabaseLocation {
  /** The URL to connect to. */
  url: string;
  /** 'url' when DATABASE_URL chose the server, 'embedded' for the built-in default. */
  source: 'url' | 'embedded';
  /** True when this process started the embedded server (it stops with this process). */
  startedHere: boolean;
  /** At the start of a shutdown: marks the embedded server this process started as stopping (see EmbeddedPostgresHandle.retire). */
  retire(): void;
  /** Stops the embedded server when this process started it; otherwise does nothing. */
  stop(): Promise<void>;
}

/** DATABASE_URL when given; otherwise the embedded PostgreSQL in the data folder (started if needed). */
export async function locateDatabase(options: {
  databaseUrl?: string;
  dataDir: string;
  embeddedPort: number;
  log?: (line: string) => void;
}): Promise<DatabaseLocation> {
  if (options.databaseUrl) return { url: options.databaseUrl, source: 'url', startedHere: false, retire: () => undefined, stop: async () => undefined };
  const server = await ensureEmbeddedPostgres({ dataDir: join(options.dataDir, 'postgres'), port: options.embeddedPort, log: options.log });
  return { url: server.url, source: 'embedded', startedHere: server.startedHere, retire: () => server.retire(), stop: () => server.stop() };
}
