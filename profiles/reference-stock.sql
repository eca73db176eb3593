-- Stock for the audit of the reference pipeline (reference.yaml): the load
-- orders SKU-1, a request's quantity being its number, so the stock must
-- outlast any audit's load (at most 1000 requests of at most 1000 each).
INSERT INTO stock (sku, quantity, price_cents) VALUES ('SKU-1', 1000000000, 100);
