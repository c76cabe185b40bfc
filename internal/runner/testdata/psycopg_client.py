"""A psycopg 3 client for the replay tests: typed parameters, savepoints,
COPY FROM STDIN, a prepared-statement name reused for another text after
it was closed, and two sessions contending for one row lock. Written for
dbparity's tests; run as: python3 psycopg_client.py DSN"""
import sys
import threading
import time

import psycopg

dsn = sys.argv[1]


def typed(conn):
    # Server-side binding sends $1 * $2 with the parameters' types: from the
    # log's text alone the server cannot choose the operator (42725).
    conn.execute("SELECT %s * %s", (6, 7))
    # As integers 10 > 9; compared as text, '10' < '9' and nothing is added.
    conn.execute("INSERT INTO typed(note) SELECT 'ten is more than nine' WHERE %s > %s", (10, 9))
    conn.execute("INSERT INTO typed(note) SELECT 'products' WHERE %s * %s = 42", (6, 7))


def savepoints(conn):
    with conn.transaction():
        conn.execute("INSERT INTO sp(v) VALUES (1)")
        try:
            with conn.transaction():  # SAVEPOINT ... ROLLBACK TO SAVEPOINT
                conn.execute("INSERT INTO sp(v) VALUES (1 / %s)", (0,))
        except psycopg.errors.DivisionByZero:
            pass
        conn.execute("INSERT INTO sp(v) VALUES (2)")


def copy(conn):
    with conn.cursor() as cur:
        with cur.copy("COPY copied(v) FROM STDIN") as cp:
            for i in range(5):
                cp.write_row((i,))


def reuse(conn):
    pg = conn.pgconn
    for text in (b"INSERT INTO reused(v) VALUES ('first')", b"INSERT INTO reused(v) VALUES ('second')"):
        pg.prepare(b"stmt1", text)
        res = pg.exec_prepared(b"stmt1", [])
        assert res.status == psycopg.pq.ExecStatus.COMMAND_OK, res.error_message
        if hasattr(pg, "close_prepared"):
            pg.close_prepared(b"stmt1")  # libpq 17: a protocol-level Close, not in the log
        else:
            conn.execute("DEALLOCATE stmt1")


def contend():
    a = psycopg.connect(dsn, autocommit=False)
    b = psycopg.connect(dsn, autocommit=False)
    a.execute("UPDATE counter SET n = n + 1 WHERE id = 1")  # holds the row

    def second():
        b.execute("UPDATE counter SET n = n * 10 WHERE id = 1")  # waits for a's commit
        b.commit()

    t = threading.Thread(target=second)
    t.start()
    time.sleep(0.3)
    a.commit()
    t.join()
    a.close()
    b.close()


with psycopg.connect(dsn, autocommit=True) as conn:
    typed(conn)
    savepoints(conn)
    copy(conn)
    reuse(conn)
contend()
print("psycopg", psycopg.__version__, "libpq", psycopg.pq.version())
