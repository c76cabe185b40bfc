package k8s

import (
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/applyconfigurations"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/yaml"
)

// docs splits a manifest into its YAML documents, each validated against
// the Kubernetes API's schema (the OpenAPI models client-go carries,
// offline): a field that is not in the schema, or of the wrong type, fails.
func docs(t *testing.T, manifest []byte) []*unstructured.Unstructured {
	t.Helper()
	tc := applyconfigurations.NewTypeConverter(scheme.Scheme)
	var out []*unstructured.Unstructured
	for _, d := range strings.Split(string(manifest), "\n---\n") {
		var m map[string]any
		if err := yaml.UnmarshalStrict([]byte(d), &m); err != nil {
			t.Fatalf("not YAML: %v\n%s", err, d)
		}
		u := &unstructured.Unstructured{Object: m}
		if _, err := tc.ObjectToTyped(u); err != nil {
			t.Fatalf("%s %s does not validate against the Kubernetes API schema: %v", u.GetKind(), u.GetName(), err)
		}
		out = append(out, u)
	}
	return out
}

func TestManifestValidates(t *testing.T) {
	o := Options{Name: "oe-study", Namespace: "bench", Image: "registry.example/dbparity:0.2", Parts: 3, Claim: "results",
		RunID: "oe-study-1", RunArgs: []string{"--target", "postgres://bench@db.example:5432/oe", "--users", "96", "--duration", "10m", "--label", "vm"},
		MergeWait: 30 * time.Minute, Secret: "oe-db"}
	m, err := Manifest(o)
	if err != nil {
		t.Fatal(err)
	}
	ds := docs(t, m)
	if len(ds) != 2 {
		t.Fatalf("%d documents, want the parts' Job and the merge Job", len(ds))
	}
	var job, merge batchv1.Job
	for i, dst := range []*batchv1.Job{&job, &merge} {
		if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(ds[i].Object, dst, true); err != nil {
			t.Fatal(err)
		}
	}
	s := job.Spec
	if job.Name != "oe-study" || job.Namespace != "bench" || s.CompletionMode == nil || *s.CompletionMode != batchv1.IndexedCompletion ||
		*s.Completions != 3 || *s.Parallelism != 3 || *s.BackoffLimit != 0 {
		t.Errorf("parts' Job: %s/%s %+v", job.Namespace, job.Name, s)
	}
	c := s.Template.Spec.Containers[0]
	args := strings.Join(c.Args, " ")
	for _, want := range []string{"run --part $(JOB_COMPLETION_INDEX)/3 --run-id oe-study-1 --out /results/oe-study/part-$(JOB_COMPLETION_INDEX).json",
		"--users 96 --duration 10m --label vm"} {
		if !strings.Contains(args, want) {
			t.Errorf("part args %q lack %q", args, want)
		}
	}
	if c.Env[0].Name != "JOB_COMPLETION_INDEX" || s.Template.Spec.Volumes[0].PersistentVolumeClaim.ClaimName != "results" {
		t.Errorf("part env %+v, volumes %+v", c.Env, s.Template.Spec.Volumes)
	}
	// The password comes from the Secret, for either engine.
	for i, name := range []string{"PGPASSWORD", "MYSQL_PWD"} {
		if e := c.Env[1+i]; e.Name != name || e.ValueFrom == nil || e.ValueFrom.SecretKeyRef == nil ||
			e.ValueFrom.SecretKeyRef.Name != "oe-db" || e.ValueFrom.SecretKeyRef.Key != "password" {
			t.Errorf("part env %+v: want %s from Secret oe-db", c.Env, name)
		}
	}
	mc := merge.Spec.Template.Spec.Containers[0]
	if merge.Name != "oe-study-merge" || !strings.Contains(mc.Args[0], "dbparity merge --wait 30m0s --out /results/oe-study/run.json /results/oe-study/part-0.json /results/oe-study/part-1.json /results/oe-study/part-2.json") {
		t.Errorf("merge Job %s: %q", merge.Name, mc.Args)
	}

	// The validation can fail: a misspelt field is refused.
	bad := strings.Replace(string(m), "completionMode:", "completionMod:", 1)
	tc := applyconfigurations.NewTypeConverter(scheme.Scheme)
	var x map[string]any
	if err := yaml.Unmarshal([]byte(strings.Split(bad, "\n---\n")[0]), &x); err != nil {
		t.Fatal(err)
	}
	if _, err := tc.ObjectToTyped(&unstructured.Unstructured{Object: x}); err == nil {
		t.Error("a Job with a misspelt field validates")
	}
}

func TestManifestRefuses(t *testing.T) {
	good := Options{Name: "x", Image: "i", Parts: 2, Claim: "c", RunID: "r"}
	for _, c := range []struct {
		change func(*Options)
		want   string
	}{
		{func(o *Options) { o.Name = "Bad_Name" }, "--name"},
		{func(o *Options) { o.Parts = 1 }, "--parts 1"},
		{func(o *Options) { o.Image = "" }, "--image"},
		{func(o *Options) { o.Claim = "" }, "--claim"},
		{func(o *Options) { o.RunArgs = []string{"--out=x.json"} }, "--out=x.json"},
		{func(o *Options) { o.RunArgs = []string{"--part", "0/2"} }, "--part"},
	} {
		o := good
		c.change(&o)
		if _, err := Manifest(o); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want an error naming %s", o, err, c.want)
		}
	}
	if _, err := Manifest(good); err != nil {
		t.Error(err)
	}
}

// With metrics, each part serves them on the named port and a PodMonitor
// selects the parts' pods and scrapes that port.
func TestManifestMetrics(t *testing.T) {
	o := Options{Name: "oe", Image: "img", Parts: 2, Claim: "results", RunID: "oe-1", RunArgs: []string{"--users", "8"}, MetricsPort: 9464}
	m, err := Manifest(o)
	if err != nil {
		t.Fatal(err)
	}
	parts := strings.Split(string(m), "\n---\n")
	if len(parts) != 3 {
		t.Fatalf("%d documents, want the two Jobs and a PodMonitor", len(parts))
	}
	ds := docs(t, []byte(strings.Join(parts[:2], "\n---\n")))
	var job batchv1.Job
	if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(ds[0].Object, &job, true); err != nil {
		t.Fatal(err)
	}
	c := job.Spec.Template.Spec.Containers[0]
	if !strings.Contains(strings.Join(c.Args, " "), "--metrics-addr 0.0.0.0:9464") || len(c.Ports) != 1 || c.Ports[0].Name != "metrics" ||
		c.Ports[0].ContainerPort != 9464 {
		t.Errorf("part args %q, ports %+v", c.Args, c.Ports)
	}
	var pm struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		Metadata   struct {
			Name   string            `json:"name"`
			Labels map[string]string `json:"labels"`
		} `json:"metadata"`
		Spec struct {
			Selector struct {
				MatchLabels map[string]string `json:"matchLabels"`
			} `json:"selector"`
			PodMetricsEndpoints []struct {
				Port     string `json:"port"`
				Path     string `json:"path"`
				Interval string `json:"interval"`
			} `json:"podMetricsEndpoints"`
		} `json:"spec"`
	}
	if err := yaml.UnmarshalStrict([]byte(parts[2]), &pm); err != nil {
		t.Fatalf("PodMonitor: %v\n%s", err, parts[2])
	}
	sel := pm.Spec.Selector.MatchLabels
	if pm.APIVersion != "monitoring.coreos.com/v1" || pm.Kind != "PodMonitor" || len(sel) == 0 || len(pm.Spec.PodMetricsEndpoints) != 1 ||
		pm.Spec.PodMetricsEndpoints[0].Port != "metrics" || pm.Spec.PodMetricsEndpoints[0].Path != "/metrics" {
		t.Errorf("PodMonitor %+v", pm)
	}
	for k, v := range sel {
		if job.Spec.Template.Labels[k] != v {
			t.Errorf("the PodMonitor selects %s=%s, which the parts' pods do not carry (%v)", k, v, job.Spec.Template.Labels)
		}
	}
	o.RunArgs = append(o.RunArgs, "--metrics-addr", "0.0.0.0:1")
	if _, err := Manifest(o); err == nil || !strings.Contains(err.Error(), "--metrics") {
		t.Errorf("--metrics-addr in the parts' flags: %v", err)
	}
}
