// A pgJDBC application for bench/replayclients: 4 threads, each with its
// own connection and a fixed random seed, for SECONDS seconds, running
// transactions of prepared statements with typed setters (setInt,
// setBigDecimal, setTimestamp, setBoolean, setShort, setLong, setString)
// on the tables the bench made (jaccounts, jhot, jledger): read an
// account, update it, insert a ledger row, then update the one shared
// hot row, and commit. pgJDBC switches each statement to a named
// server-side prepared statement after its fifth execution
// (prepareThreshold).
//
// Run as: java -cp postgresql.jar JdbcApp.java JDBC-URL SECONDS [MIN]
//
// With MIN, each thread goes on past SECONDS until it committed MIN
// transactions: a test on a loaded host gets its count however slowly the
// JVM started.
import java.math.BigDecimal;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Timestamp;
import java.time.LocalDateTime;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.atomic.AtomicLong;

public class JdbcApp {
    static final int THREADS = 4;
    static final int ACCOUNTS = 1000;
    static final AtomicLong committed = new AtomicLong();
    static final AtomicLong retried = new AtomicLong();
    static final List<String> failures = new ArrayList<>();

    public static void main(String[] args) throws Exception {
        String url = args[0];
        long deadline = System.nanoTime() + Long.parseLong(args[1]) * 1_000_000_000L;
        int min = args.length > 2 ? Integer.parseInt(args[2]) : 0;
        List<Thread> threads = new ArrayList<>();
        for (int t = 0; t < THREADS; t++) {
            final int id = t;
            Thread th = new Thread(() -> {
                try {
                    work(url, id, deadline, min);
                } catch (Exception e) {
                    synchronized (failures) {
                        failures.add("thread " + id + ": " + e);
                    }
                }
            });
            threads.add(th);
            th.start();
        }
        for (Thread th : threads) {
            th.join();
        }
        System.out.println("pgjdbc " + org.postgresql.Driver.getVersion() + ": " + committed.get() + " transactions committed, "
                + retried.get() + " retried");
        if (!failures.isEmpty()) {
            failures.forEach(System.err::println);
            System.exit(1);
        }
    }

    static void work(String url, int id, long deadline, int min) throws SQLException {
        Random rnd = new Random(1000 + id);
        LocalDateTime base = LocalDateTime.of(2024, 1, 1, 0, 0);
        try (Connection c = DriverManager.getConnection(url)) {
            c.setAutoCommit(false);
            PreparedStatement read = c.prepareStatement("SELECT balance, active FROM jaccounts WHERE id = ?");
            PreparedStatement update = c.prepareStatement(
                    "UPDATE jaccounts SET balance = balance + ?, touched = ?, active = ?, visits = visits + 1 WHERE id = ?");
            PreparedStatement insert = c.prepareStatement(
                    "INSERT INTO jledger(account, amount, note, at, credit, qty) VALUES (?, ?, ?, ?, ?, ?)");
            PreparedStatement hot = c.prepareStatement("UPDATE jhot SET n = n + ?, last_thread = ? WHERE id = 1");
            int seq = 0, done = 0;
            while (System.nanoTime() < deadline || done < min) {
                seq++;
                int account = 1 + rnd.nextInt(ACCOUNTS);
                BigDecimal amount = BigDecimal.valueOf(rnd.nextInt(20000) - 10000, 2);
                Timestamp at = Timestamp.valueOf(base.plusSeconds(id * 1_000_000L + seq));
                boolean active = rnd.nextInt(10) != 0;
                short qty = (short) rnd.nextInt(100);
                long step = 1 + rnd.nextInt(5);
                try {
                    read.setInt(1, account);
                    try (ResultSet rs = read.executeQuery()) {
                        rs.next();
                    }
                    update.setBigDecimal(1, amount);
                    update.setTimestamp(2, at);
                    update.setBoolean(3, active);
                    update.setInt(4, account);
                    update.executeUpdate();
                    insert.setInt(1, account);
                    insert.setBigDecimal(2, amount);
                    insert.setString(3, "t" + id + "-" + seq);
                    insert.setTimestamp(4, at);
                    insert.setBoolean(5, amount.signum() >= 0);
                    insert.setShort(6, qty);
                    insert.executeUpdate();
                    // The hot row last: every transaction takes it, after its account.
                    hot.setLong(1, step);
                    hot.setInt(2, id);
                    hot.executeUpdate();
                    c.commit();
                    committed.incrementAndGet();
                    done++;
                } catch (SQLException e) {
                    c.rollback();
                    String state = e.getSQLState();
                    if (!"40001".equals(state) && !"40P01".equals(state)) {
                        throw e;
                    }
                    retried.incrementAndGet();
                }
            }
        }
    }
}
