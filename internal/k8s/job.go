// Package k8s writes the Kubernetes manifest of a run split over several
// driver pods: an Indexed Job whose pods each run one part of the run
// (dbparity run --part $(JOB_COMPLETION_INDEX)/N), their results on a
// shared volume, and a Job that merges them once all are there. It only
// writes text: nothing here talks to a cluster.
package k8s

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"time"
)

// Options shape the manifest.
type Options struct {
	Name      string // the Job's name; the merge Job is NAME-merge
	Namespace string // "" leaves it to kubectl's context
	Image     string // an image with dbparity on its PATH and a shell (the merge step's)
	Parts     int
	// Claim is the PersistentVolumeClaim the results go to (ReadWriteMany
	// when the pods may land on several nodes), mounted at /results.
	Claim string
	// RunID names the run in the barrier table; the parts agree on it.
	RunID string
	// RunArgs are run's flags, the same for every part (the target, the
	// workload, --users, --duration, --label, ...).
	RunArgs []string
	// MergeWait bounds how long the merge step waits for the parts'
	// results; Hold is how long it then stays up so they can be copied.
	MergeWait, Hold time.Duration
	// Secret names a Kubernetes Secret whose key "password" the parts
	// read as PGPASSWORD and MYSQL_PWD: the manifest holds no credential.
	Secret string
	// MetricsPort, when above 0, has each part serve live metrics on that
	// port (--metrics-addr), names it "metrics" in the pods, and adds a
	// PodMonitor (Prometheus Operator) that scrapes it every 5 s.
	MetricsPort int
}

// Mount is where the results volume is mounted in the pods.
const Mount = "/results"

var (
	dnsLabel     = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)
	dnsSubdomain = regexp.MustCompile(`^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$`)
)

// Validate checks what Kubernetes would refuse, and what would make the
// parts disagree.
func (o Options) Validate() error {
	switch {
	case !dnsLabel.MatchString(o.Name) || len(o.Name) > 57:
		return fmt.Errorf("--name %q: a Job's name is lower-case letters, digits and '-', at most 57 characters here (NAME-merge must fit 63)", o.Name)
	case o.Namespace != "" && (!dnsLabel.MatchString(o.Namespace) || len(o.Namespace) > 63):
		return fmt.Errorf("--namespace %q: lower-case letters, digits and '-', at most 63 characters", o.Namespace)
	case o.Parts < 2 || o.Parts > 1000:
		return fmt.Errorf("--parts %d: between 2 and 1000 (one part needs no Job: run dbparity run)", o.Parts)
	case strings.TrimSpace(o.Image) == "":
		return fmt.Errorf("--image: name an image with dbparity on its PATH")
	case !dnsLabel.MatchString(o.Claim):
		return fmt.Errorf("--claim %q: name the PersistentVolumeClaim the results go to", o.Claim)
	case o.RunID == "":
		return fmt.Errorf("--run-id is empty")
	case o.Secret != "" && !dnsSubdomain.MatchString(o.Secret):
		return fmt.Errorf("--secret %q: name a Secret (lower-case letters, digits, '-' and '.')", o.Secret)
	case o.MetricsPort < 0 || o.MetricsPort > 65535:
		return fmt.Errorf("--metrics-port %d: a port from 1 to 65535", o.MetricsPort)
	}
	for _, a := range o.RunArgs {
		name, _, _ := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if strings.HasPrefix(a, "-") && (name == "part" || name == "out" || name == "run-id" || name == "start-at" || name == "repeat") {
			return fmt.Errorf("%s: the Job sets --part, --out and --run-id itself (and runs each part once): leave it out", a)
		}
		if strings.HasPrefix(a, "-") && name == "metrics-addr" {
			return fmt.Errorf("%s: give dbparity k8s --metrics instead: the parts then serve it and a PodMonitor scrapes them", a)
		}
	}
	return nil
}

// Manifest returns the YAML of the two Jobs.
func Manifest(o Options) ([]byte, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	if o.MergeWait <= 0 {
		o.MergeWait = time.Hour
	}
	if o.Hold <= 0 {
		o.Hold = time.Hour
	}
	dir := Mount + "/" + o.Name
	args := append([]string{"run", "--part", fmt.Sprintf("$(JOB_COMPLETION_INDEX)/%d", o.Parts), "--run-id", o.RunID,
		"--out", dir + "/part-$(JOB_COMPLETION_INDEX).json"}, o.RunArgs...)
	ports, monitor := "", ""
	if o.MetricsPort > 0 {
		// In the pod, on every interface: the Prometheus the PodMonitor
		// configures scrapes it from outside.
		args = append(args, "--metrics-addr", fmt.Sprintf("0.0.0.0:%d", o.MetricsPort))
		ports = fmt.Sprintf("\n        ports:\n        - name: metrics\n          containerPort: %d", o.MetricsPort)
		monitor = fmt.Sprintf(`---
# Live metrics of every part (Prometheus Operator); the series carry
# run_id and part: sum over part for the run, as the dashboard in
# deploy/grafana does.
apiVersion: monitoring.coreos.com/v1
kind: PodMonitor
metadata:
  name: %[1]s%[2]s
  labels:
    app.kubernetes.io/name: dbparity
spec:
  selector:
    matchLabels:
      dbparity/job: %[1]s
  podMetricsEndpoints:
  - port: metrics
    path: /metrics
    interval: 5s
`, o.Name, ns(o.Namespace))
	}
	var files []string
	for i := range o.Parts {
		files = append(files, fmt.Sprintf("%s/part-%d.json", dir, i))
	}
	merge := fmt.Sprintf("dbparity merge --wait %s --out %s/run.json %s && sleep %d", o.MergeWait, dir,
		strings.Join(files, " "), int(o.Hold.Seconds()))
	nsFlag := ""
	if o.Namespace != "" {
		nsFlag = " -n " + o.Namespace
	}
	var b strings.Builder
	fmt.Fprintf(&b, `# dbparity run %[1]q split over %[2]d driver pods (generated by dbparity k8s).
# 1. kubectl%[9]s apply -f THIS.yaml
# 2. kubectl%[9]s wait --for=condition=complete --timeout=%[10]s job/%[3]s
#    (a failed part fails the Job: a part cannot rejoin a window that started)
# 3. kubectl%[9]s wait --for=condition=ready --timeout=10m pod -l job-name=%[3]s-merge
#    kubectl%[9]s logs job/%[3]s-merge        # the merged run's summary
#    kubectl%[9]s cp $(kubectl%[9]s get pod -l job-name=%[3]s-merge -o name | cut -d/ -f2):%[4]s ./%[3]s
#    (part-I.json of each part and the merged run.json; dbparity show ./%[3]s/run.json)
# 4. kubectl%[9]s delete job %[3]s %[3]s-merge
apiVersion: batch/v1
kind: Job
metadata:
  name: %[3]s%[5]s
  labels:
    app.kubernetes.io/name: dbparity
    app.kubernetes.io/component: driver
spec:
  completionMode: Indexed
  completions: %[2]d
  parallelism: %[2]d
  backoffLimit: 0
  template:
    metadata:
      labels:
        app.kubernetes.io/name: dbparity
        app.kubernetes.io/component: driver
        dbparity/job: %[3]s
    spec:
      restartPolicy: Never
      # One part per node where there are nodes enough: each part's driver
      # CPU is then its own host's.
      topologySpreadConstraints:
      - maxSkew: 1
        topologyKey: kubernetes.io/hostname
        whenUnsatisfiable: ScheduleAnyway
        labelSelector:
          matchLabels:
            dbparity/job: %[3]s
      containers:
      - name: part
        image: %[6]s
        command: ["dbparity"]
        args: %[7]s
        env:
        - name: JOB_COMPLETION_INDEX
          valueFrom:
            fieldRef:
              fieldPath: metadata.annotations['batch.kubernetes.io/job-completion-index']%[13]s%[14]s
        volumeMounts:
        - name: results
          mountPath: %[11]s
      volumes:
      - name: results
        persistentVolumeClaim:
          claimName: %[8]s
---
apiVersion: batch/v1
kind: Job
metadata:
  name: %[3]s-merge%[5]s
  labels:
    app.kubernetes.io/name: dbparity
    app.kubernetes.io/component: merge
spec:
  backoffLimit: 0
  template:
    metadata:
      labels:
        app.kubernetes.io/name: dbparity
        app.kubernetes.io/component: merge
    spec:
      restartPolicy: Never
      containers:
      - name: merge
        image: %[6]s
        command: ["sh", "-c"]
        args: %[12]s
        volumeMounts:
        - name: results
          mountPath: %[11]s
      volumes:
      - name: results
        persistentVolumeClaim:
          claimName: %[8]s
`, o.RunID, o.Parts, o.Name, dir, ns(o.Namespace), quote(o.Image), flow(args), o.Claim, nsFlag, fmt.Sprintf("%ds", int(o.MergeWait.Seconds())),
		Mount, flow([]string{merge}), secretEnv(o.Secret), ports)
	b.WriteString(monitor)
	return []byte(b.String()), nil
}

// ns is a manifest's namespace line, or nothing.
func ns(namespace string) string {
	if namespace == "" {
		return ""
	}
	return "\n  namespace: " + namespace
}

// secretEnv is the parts' environment from the Secret: the password of
// PostgreSQL and MySQL targets, which read it there.
func secretEnv(secret string) string {
	if secret == "" {
		return ""
	}
	var b strings.Builder
	for _, name := range []string{"PGPASSWORD", "MYSQL_PWD"} {
		fmt.Fprintf(&b, "\n        - name: %s\n          valueFrom:\n            secretKeyRef:\n              name: %s\n              key: password", name, quote(secret))
	}
	return b.String()
}

// quote is s as a YAML double-quoted scalar (JSON's string syntax is
// YAML's).
func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// flow is a YAML flow sequence of strings.
func flow(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = quote(s)
	}
	return "[" + strings.Join(q, ", ") + "]"
}
