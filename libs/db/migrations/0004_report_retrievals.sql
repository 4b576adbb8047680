CREATE TABLE "report_retrievals" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"key_id" uuid NOT NULL,
	"client_id" uuid NOT NULL,
	"laboratory_id" uuid NOT NULL,
	"environment" "environment" NOT NULL,
	"program_id" uuid NOT NULL,
	"order_id" uuid NOT NULL,
	"result_id" uuid NOT NULL,
	"superseded_by_result_id" uuid,
	"issued_at" timestamp with time zone NOT NULL,
	"expires_at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
ALTER TABLE "report_retrievals" ADD CONSTRAINT "report_retrievals_key_id_api_keys_id_fk" FOREIGN KEY ("key_id") REFERENCES "public"."api_keys"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "report_retrievals" ADD CONSTRAINT "report_retrievals_client_id_api_clients_id_fk" FOREIGN KEY ("client_id") REFERENCES "public"."api_clients"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "report_retrievals" ADD CONSTRAINT "report_retrievals_laboratory_id_laboratories_id_fk" FOREIGN KEY ("laboratory_id") REFERENCES "public"."laboratories"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "report_retrievals" ADD CONSTRAINT "report_retrievals_program_id_programs_id_fk" FOREIGN KEY ("program_id") REFERENCES "public"."programs"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "report_retrievals" ADD CONSTRAINT "report_retrievals_order_id_orders_id_fk" FOREIGN KEY ("order_id") REFERENCES "public"."orders"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "report_retrievals" ADD CONSTRAINT "report_retrievals_result_id_result_versions_id_fk" FOREIGN KEY ("result_id") REFERENCES "public"."result_versions"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "report_retrievals_expires_idx" ON "report_retrievals" USING btree ("expires_at");