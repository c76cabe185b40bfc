-- The tables JdbcApp.java works on (bench/replayclients and the wire
-- capture's pgJDBC test).
CREATE TABLE jaccounts(id int PRIMARY KEY, balance numeric(14,2) NOT NULL, active bool NOT NULL, touched timestamp,
	visits int NOT NULL DEFAULT 0);
INSERT INTO jaccounts SELECT g, 1000, true, NULL, 0 FROM generate_series(1, 1000) g;
CREATE TABLE jhot(id int PRIMARY KEY, n bigint NOT NULL, last_thread int);
INSERT INTO jhot VALUES (1, 0, NULL);
CREATE TABLE jledger(id bigserial PRIMARY KEY, account int NOT NULL, amount numeric(14,2) NOT NULL, note text NOT NULL,
	at timestamp NOT NULL, credit bool NOT NULL, qty smallint NOT NULL);
