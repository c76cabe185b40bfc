"""A psycopg 3 application for bench/replayclients: 4 threads, each with its
own connection and a fixed random seed, for SECONDS seconds, doing
transactions on a small schema (made by the bench: accounts, transfers,
counter, events) with typed parameters (int, Decimal, str, bool, datetime
with and without a time zone):

  transfer  (45%)  rows staged in a per-connection temp table, then
                   applied to accounts (locked in id order) and copied to
                   transfers, inside one transaction
  savepoint (20%)  an update, a nested transaction (SAVEPOINT) whose
                   insert fails on the primary key and is rolled back to,
                   then an insert
  copy      (10%)  COPY events FROM STDIN of a few rows in a transaction
  counter   (20%)  the shared hot row: counter.n += k, read back
  report     (5%)  a read with numeric, bool and timestamp parameters

Run as: python3 psycopg_app.py DSN SECONDS"""
import random
import sys
import threading
import time
from datetime import datetime, timedelta, timezone
from decimal import Decimal

import psycopg

dsn, seconds = sys.argv[1], float(sys.argv[2])
THREADS = 4
ACCOUNTS = 1000
stop_at = time.monotonic() + seconds
counts = [dict() for _ in range(THREADS)]
failures = []
BASE = datetime(2024, 1, 1, tzinfo=timezone.utc)


def bump(n, kind):
    counts[n][kind] = counts[n].get(kind, 0) + 1


def transfer(conn, rnd, n, seq):
    legs = sorted(rnd.sample(range(1, ACCOUNTS + 1), rnd.randint(2, 3)))
    amount = Decimal(rnd.randint(1, 50000)) / 100
    at = BASE + timedelta(seconds=seq, milliseconds=n)
    with conn.transaction():
        with conn.cursor() as cur:
            cur.executemany("INSERT INTO pending(src, dst, amount, note) VALUES (%s, %s, %s, %s)",
                            [(legs[0], dst, amount, f"t{n}-{seq}") for dst in legs[1:]])
        # Accounts in id order: every transaction locks them so, no deadlock.
        for acct in legs:
            delta = -amount * (len(legs) - 1) if acct == legs[0] else amount
            conn.execute("UPDATE accounts SET balance = balance + %s, touched = %s WHERE id = %s",
                         (delta, at.replace(tzinfo=None), acct))
        conn.execute("INSERT INTO transfers(src, dst, amount, note, at, ok)"
                     " SELECT src, dst, amount, note, %s, %s FROM pending", (at, amount < 250))
        conn.execute("DELETE FROM pending")


def savepoint(conn, rnd, n, seq):
    acct = rnd.randint(1, ACCOUNTS)
    at = BASE + timedelta(seconds=seq)
    with conn.transaction():
        conn.execute("UPDATE accounts SET active = %s, touched = %s WHERE id = %s",
                     (rnd.random() < 0.9, at.replace(tzinfo=None), acct))
        try:
            with conn.transaction():  # SAVEPOINT; ROLLBACK TO SAVEPOINT on the error
                conn.execute("INSERT INTO accounts(id, owner, balance, active, opened) VALUES (%s, %s, %s, %s, %s)",
                             (acct, f"dup {n}", Decimal("0.00"), False, at))
        except psycopg.errors.UniqueViolation:
            bump(n, "caught")
        conn.execute("INSERT INTO transfers(src, dst, amount, note, at, ok) VALUES (%s, %s, %s, %s, %s, %s)",
                     (acct, None, Decimal("0.01"), "savepoint", at, False))


def copy(conn, rnd, n, seq):
    with conn.transaction():
        with conn.cursor() as cur:
            with cur.copy("COPY events(thread, seq, kind, at, payload) FROM STDIN") as cp:
                for i in range(rnd.randint(2, 5)):
                    cp.write_row((n, seq * 10 + i, rnd.choice(["view", "click", "buy"]),
                                  BASE + timedelta(seconds=seq, microseconds=i), f"p{rnd.randint(0, 999)}"))


def counter(conn, rnd, n, seq):
    with conn.transaction():
        conn.execute("UPDATE counter SET n = n + %s, last = %s WHERE id = 1",
                     (rnd.randint(1, 5), BASE + timedelta(seconds=seq)))
        conn.execute("SELECT n FROM counter WHERE id = %s", (1,)).fetchone()


def report(conn, rnd, n, seq):
    conn.execute("SELECT count(*), coalesce(sum(amount), 0) FROM transfers WHERE amount > %s AND ok = %s AND at >= %s",
                 (Decimal(rnd.randint(0, 300)), rnd.random() < 0.5, BASE)).fetchone()


MIX = [(0.45, transfer), (0.65, savepoint), (0.75, copy), (0.95, counter), (1.0, report)]


def worker(n):
    rnd = random.Random(1000 + n)
    try:
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute("CREATE TEMP TABLE pending(src int, dst int, amount numeric(14,2), note text)")
            seq = 0
            while time.monotonic() < stop_at:
                seq += 1
                r = rnd.random()
                for bound, fn in MIX:
                    if r < bound:
                        fn(conn, rnd, n, seq)
                        bump(n, fn.__name__)
                        break
    except Exception as e:  # report and fail the run
        failures.append(f"thread {n}: {type(e).__name__}: {e}")


threads = [threading.Thread(target=worker, args=(n,)) for n in range(THREADS)]
for t in threads:
    t.start()
for t in threads:
    t.join()
total = {}
for c in counts:
    for k, v in c.items():
        total[k] = total.get(k, 0) + v
print("psycopg", psycopg.__version__, "libpq", psycopg.pq.version(), "transactions", dict(sorted(total.items())))
if failures:
    print("\n".join(failures), file=sys.stderr)
    sys.exit(1)
