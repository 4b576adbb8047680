ALTER TABLE "webhook_delivery_attempts" ALTER COLUMN "duration_ms" DROP NOT NULL;--> statement-breakpoint
ALTER TABLE "webhook_delivery_attempts" ALTER COLUMN "response_body" SET DATA TYPE bytea USING convert_to("response_body", 'UTF8');--> statement-breakpoint
ALTER TABLE "webhook_deliveries" ADD COLUMN "recovered_at" timestamp with time zone;--> statement-breakpoint
ALTER TABLE "webhook_delivery_attempts" ADD COLUMN "in_flight_until" timestamp with time zone;