CREATE TABLE "sandbox_request_log" (
	"id" bigserial PRIMARY KEY NOT NULL,
	"laboratory_id" uuid NOT NULL,
	"client_id" uuid NOT NULL,
	"environment" "environment" NOT NULL,
	"request_id" text NOT NULL,
	"occurred_at" timestamp with time zone NOT NULL,
	"method" text NOT NULL,
	"route" text NOT NULL,
	"status" integer NOT NULL,
	"error_code" text,
	"duration_ms" integer NOT NULL,
	"key_prefix" text NOT NULL,
	"door" text NOT NULL,
	"scope" text,
	"request_body" jsonb,
	"response_body" jsonb
);
--> statement-breakpoint
CREATE INDEX "sandbox_request_log_by_client" ON "sandbox_request_log" USING btree ("client_id","environment","laboratory_id","id");--> statement-breakpoint
CREATE INDEX "sandbox_request_log_by_request_id" ON "sandbox_request_log" USING btree ("client_id","request_id");--> statement-breakpoint
CREATE INDEX "sandbox_request_log_by_time" ON "sandbox_request_log" USING btree ("occurred_at");