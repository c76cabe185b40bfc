package capture

// ServerSettings says which server settings make a log capturable and what
// they cost; the capture command prints it in its help, and
// docs/capture.md says the same at length.
const ServerSettings = `Server settings for a capture (postgresql.conf, or ALTER SYSTEM then
SELECT pg_reload_conf(); only logging_collector needs a restart):

  logging_collector = on               # whole messages in files, rotated
  log_destination = 'csvlog'           # or 'jsonlog' (15+), or 'stderr' with:
  log_line_prefix = '%m [%p] %q%c %e user=%u db=%d app=%a '
  log_min_duration_statement = 0       # every statement with its duration and
                                       # bind parameters, logged when it ends
  log_statement = 'none'               # or 'all': statements logged when they
                                       # start; alone it gives no durations
  log_connections = on                 # session start, user, database, client
  log_disconnections = on              # session end
  log_parameter_max_length = -1        # parameters whole (the default)
  log_parameter_max_length_on_error = -1   # parameters of binds that fail
  log_min_error_statement = error      # failed statements with their text (default)
  log_error_verbosity = default        # terse drops the parameters (DETAIL)
  log_timezone = 'UTC'
  lc_messages = 'C'                    # capture reads the English messages

Leave log_statement_sample_rate, log_transaction_sample_rate and
log_min_duration_sample at their defaults: sampled logs miss statements.
Turn capture logging off again when done (log_min_duration_statement = -1).

What it costs (measured on a 2-core VM with server and pgbench sharing it,
pgbench tpcb-like, scale 10, 4 clients, 3 interleaved rounds of 20 s,
median tps; internal/capture/testdata/cost.sh):

  log bytes per transaction   simple   extended   prepared
    stderr                      1310       5426       4010
    csvlog                      1862       6065       4111
    jsonlog                     3106       9890       6677
    csvlog + log_statement=all  3215       7359       5377

  throughput vs logging off   -M extended       -M simple
    stderr                    0.74x (2248/3034)  0.82x (2878/3519)
    csvlog                    0.74x (2238/3034)  0.85x (2974/3519)
    jsonlog                   0.67x (2030/3034)  0.88x (3080/3519)

The extended protocol logs parse, bind and execute with the parameters
twice: about 800 bytes per statement, 12 MB/s (43 GB an hour) at 2,200
transactions/s. Capture for a bounded window and watch the log disk.

MySQL and MariaDB (SET GLOBAL, no restart; --format auto tells the two
logs apart):

  general log (every command as received, logins and Quit included; no
  durations; MariaDB stamps whole seconds):
    SET GLOBAL log_output = 'FILE', GLOBAL general_log_file = '/path/general.log',
        GLOBAL general_log = ON;
  slow log (every statement with its duration, as it ends; no logins):
    SET GLOBAL log_output = 'FILE', GLOBAL slow_query_log_file = '/path/slow.log',
        GLOBAL long_query_time = 0, GLOBAL slow_query_log = ON;

Prepared statements' executions are logged with their values in place
and replayed as text queries. Name rotated files oldest first.
Turn the logs off again when done (general_log = OFF, slow_query_log = OFF).
`
