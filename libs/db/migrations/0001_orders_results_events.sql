CREATE TABLE "event_streams" (
	"client_id" uuid NOT NULL,
	"environment" "environment" NOT NULL,
	"last_sequence" bigint DEFAULT 0 NOT NULL,
	CONSTRAINT "event_streams_client_id_environment_pk" PRIMARY KEY("client_id","environment")
);
--> statement-breakpoint
CREATE TABLE "events" (
	"id" uuid PRIMARY KEY NOT NULL,
	"client_id" uuid NOT NULL,
	"environment" "environment" NOT NULL,
	"sequence" bigint NOT NULL,
	"type" text NOT NULL,
	"version" integer DEFAULT 1 NOT NULL,
	"occurred_at" timestamp with time zone NOT NULL,
	"program_id" uuid,
	"order_id" uuid,
	"data" jsonb NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "idempotency_keys" (
	"client_id" uuid NOT NULL,
	"environment" "environment" NOT NULL,
	"key" text NOT NULL,
	"request_hash" text NOT NULL,
	"state" text NOT NULL,
	"locked_until" timestamp with time zone NOT NULL,
	"response_status" integer,
	"response_data" jsonb,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "idempotency_keys_client_id_environment_key_pk" PRIMARY KEY("client_id","environment","key")
);
--> statement-breakpoint
CREATE TABLE "order_exceptions" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"order_id" uuid NOT NULL,
	"category" text NOT NULL,
	"severity" text NOT NULL,
	"status" text NOT NULL,
	"owner_role" text NOT NULL,
	"entity_type" text NOT NULL,
	"entity_id" uuid,
	"retryable" boolean DEFAULT false NOT NULL,
	"opened_at" timestamp with time zone DEFAULT now() NOT NULL,
	"resolved_at" timestamp with time zone,
	"source_exception_type" text,
	"source_domain" text,
	"source_adapter_key" text,
	"operator_notes" text,
	"resolution_text" text
);
--> statement-breakpoint
CREATE TABLE "orders" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"laboratory_id" uuid NOT NULL,
	"client_id" uuid NOT NULL,
	"environment" "environment" NOT NULL,
	"external_order_id" text NOT NULL,
	"program_id" uuid NOT NULL,
	"item_id" uuid NOT NULL,
	"external_subject_id" text NOT NULL,
	"collection" text NOT NULL,
	"region" text,
	"billing_mode" text,
	"requested_collection_at" timestamp with time zone,
	"collection_location" text,
	"protected_data" text,
	"synthetic" boolean NOT NULL,
	"lifecycle_detail" text NOT NULL,
	"requisition_state" text DEFAULT 'not_issued' NOT NULL,
	"requisition_id" text,
	"laboratory_reference" text,
	"requisition_created_at" timestamp with time zone,
	"accession_id" uuid,
	"accession_number" text,
	"accession_source_system" text,
	"accessioned_at" timestamp with time zone,
	"received_at" timestamp with time zone,
	"transmission_status" text DEFAULT 'not_sent' NOT NULL,
	"ack_status" text DEFAULT 'not_requested' NOT NULL,
	"external_order_ref" text,
	"transmission_attempt_no" integer DEFAULT 0 NOT NULL,
	"sent_at" timestamp with time zone,
	"acknowledged_at" timestamp with time zone,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "rate_limit_counters" (
	"subject" text NOT NULL,
	"window_start" timestamp with time zone NOT NULL,
	"count" integer NOT NULL,
	CONSTRAINT "rate_limit_counters_subject_window_start_pk" PRIMARY KEY("subject","window_start")
);
--> statement-breakpoint
CREATE TABLE "result_versions" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"order_id" uuid NOT NULL,
	"version" integer,
	"version_type" text NOT NULL,
	"state" text NOT NULL,
	"status" text NOT NULL,
	"performing_laboratory" text NOT NULL,
	"performing_laboratory_system" text NOT NULL,
	"source_result_id" text NOT NULL,
	"observations" jsonb NOT NULL,
	"is_critical" boolean DEFAULT false NOT NULL,
	"report_document" text,
	"report_content_type" text,
	"supersedes_result_id" uuid,
	"released_at" timestamp with time zone,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "specimens" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"order_id" uuid NOT NULL,
	"specimen_code" text NOT NULL,
	"specimen_type" text NOT NULL,
	"status" text NOT NULL,
	"accession_number" text,
	"rejection_reason" text,
	"collected_at" timestamp with time zone,
	"received_at" timestamp with time zone,
	"recollection_of" uuid,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
ALTER TABLE "event_streams" ADD CONSTRAINT "event_streams_client_id_api_clients_id_fk" FOREIGN KEY ("client_id") REFERENCES "public"."api_clients"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "events" ADD CONSTRAINT "events_client_id_api_clients_id_fk" FOREIGN KEY ("client_id") REFERENCES "public"."api_clients"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "idempotency_keys" ADD CONSTRAINT "idempotency_keys_client_id_api_clients_id_fk" FOREIGN KEY ("client_id") REFERENCES "public"."api_clients"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "order_exceptions" ADD CONSTRAINT "order_exceptions_order_id_orders_id_fk" FOREIGN KEY ("order_id") REFERENCES "public"."orders"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "orders" ADD CONSTRAINT "orders_laboratory_id_laboratories_id_fk" FOREIGN KEY ("laboratory_id") REFERENCES "public"."laboratories"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "orders" ADD CONSTRAINT "orders_client_id_api_clients_id_fk" FOREIGN KEY ("client_id") REFERENCES "public"."api_clients"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "orders" ADD CONSTRAINT "orders_program_id_programs_id_fk" FOREIGN KEY ("program_id") REFERENCES "public"."programs"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "orders" ADD CONSTRAINT "orders_item_id_catalog_items_id_fk" FOREIGN KEY ("item_id") REFERENCES "public"."catalog_items"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "result_versions" ADD CONSTRAINT "result_versions_order_id_orders_id_fk" FOREIGN KEY ("order_id") REFERENCES "public"."orders"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "specimens" ADD CONSTRAINT "specimens_order_id_orders_id_fk" FOREIGN KEY ("order_id") REFERENCES "public"."orders"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
CREATE UNIQUE INDEX "events_stream_sequence_idx" ON "events" USING btree ("client_id","environment","sequence");--> statement-breakpoint
CREATE INDEX "idempotency_keys_created_idx" ON "idempotency_keys" USING btree ("created_at");--> statement-breakpoint
CREATE INDEX "order_exceptions_order_idx" ON "order_exceptions" USING btree ("order_id","opened_at");--> statement-breakpoint
CREATE UNIQUE INDEX "orders_external_order_id_idx" ON "orders" USING btree ("client_id","environment","external_order_id");--> statement-breakpoint
CREATE INDEX "orders_client_env_created_idx" ON "orders" USING btree ("client_id","environment","created_at");--> statement-breakpoint
CREATE INDEX "result_versions_order_idx" ON "result_versions" USING btree ("order_id");--> statement-breakpoint
CREATE UNIQUE INDEX "result_versions_order_version_idx" ON "result_versions" USING btree ("order_id","version") WHERE version is not null;--> statement-breakpoint
CREATE INDEX "specimens_order_idx" ON "specimens" USING btree ("order_id");