import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import type { ReadRoute, ReplicaSet, ReplicaState } from '../reads/replica-set';
import { registerReplicaMetrics } from './metrics';

describe('replica metrics', () => {
  it('show each replica state and lag as last checked, and where replica-safe reads were answered', async () => {
    const states: ReplicaState[] = [
      { name: 'replica-a:5432/partner', state: 'up', lagBytes: 120, lagSeconds: 0.2, replayPaused: false },
      { name: 'replica-b:5432/partner', state: 'down', reason: 'ECONNREFUSED' },
    ];
    const counts = new Map<ReadRoute, number>([
      ['replica', 7],
      ['primary_behind_client', 2],
    ]);
    const registry = new Registry();
    registerReplicaMetrics(registry, { states: () => states, readCounts: () => counts } as unknown as ReplicaSet);
    const text = await registry.metrics();
    expect(text).toContain('partner_db_replica_up{replica="replica-a:5432/partner",state="up"} 1');
    expect(text).toContain('partner_db_replica_up{replica="replica-b:5432/partner",state="down"} 0');
    expect(text).toContain('partner_db_replica_lag_bytes{replica="replica-a:5432/partner"} 120');
    expect(text).not.toContain('partner_db_replica_lag_bytes{replica="replica-b');
    expect(text).toContain('partner_db_reads_total{route="replica"} 7');
    expect(text).toContain('partner_db_reads_total{route="primary_behind_client"} 2');
    expect(text).toContain('partner_db_reads_total{route="primary_after_replica_error"} 0');
  });
});
