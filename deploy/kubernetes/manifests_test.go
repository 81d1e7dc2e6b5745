package kubernetes

import (
	"bytes"
	"context"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	infv1 "sigs.k8s.io/gateway-api-inference-extension/api/v1"
	eppconfig "sigs.k8s.io/gateway-api-inference-extension/apix/config/v1alpha1"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
	"sigs.k8s.io/yaml"

	"github.com/siskin-ml/siskin/device"
	"github.com/siskin-ml/siskin/engine"
	"github.com/siskin-ml/siskin/internal/testdata"
	"github.com/siskin-ml/siskin/model/load"
	"github.com/siskin-ml/siskin/server"
)

// kinds maps apiVersion/kind to the upstream type a document decodes into.
var kinds = map[string]func() any{
	"v1/Namespace":                                 func() any { return &corev1.Namespace{} },
	"v1/Service":                                   func() any { return &corev1.Service{} },
	"v1/ServiceAccount":                            func() any { return &corev1.ServiceAccount{} },
	"v1/ConfigMap":                                 func() any { return &corev1.ConfigMap{} },
	"apps/v1/Deployment":                           func() any { return &appsv1.Deployment{} },
	"policy/v1/PodDisruptionBudget":                func() any { return &policyv1.PodDisruptionBudget{} },
	"autoscaling/v2/HorizontalPodAutoscaler":       func() any { return &autoscalingv2.HorizontalPodAutoscaler{} },
	"rbac.authorization.k8s.io/v1/Role":            func() any { return &rbacv1.Role{} },
	"rbac.authorization.k8s.io/v1/RoleBinding":     func() any { return &rbacv1.RoleBinding{} },
	"gateway.networking.k8s.io/v1/Gateway":         func() any { return &gwv1.Gateway{} },
	"gateway.networking.k8s.io/v1/HTTPRoute":       func() any { return &gwv1.HTTPRoute{} },
	"inference.networking.k8s.io/v1/InferencePool": func() any { return &infv1.InferencePool{} },
}

// manifests holds every decoded object, by "Kind/namespace/name".
type manifests map[string]any

func get[T any](t *testing.T, m manifests, kind, ns, name string) T {
	t.Helper()
	o, ok := m[kind+"/"+ns+"/"+name].(T)
	if !ok {
		t.Fatalf("no %s %s/%s in the manifests", kind, ns, name)
	}
	return o
}

// load decodes every YAML document of every manifest strictly: an
// unknown or misspelt field, a wrong type or an unknown kind fails.
func loadManifests(t *testing.T) manifests {
	t.Helper()
	files, _ := filepath.Glob("*.yaml")
	if len(files) == 0 {
		t.Fatal("no manifests")
	}
	m := manifests{}
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for i, doc := range regexp.MustCompile(`(?m)^---\s*$`).Split(string(raw), -1) {
			if strings.TrimSpace(doc) == "" {
				continue
			}
			var tm metav1.TypeMeta
			if err := yaml.Unmarshal([]byte(doc), &tm); err != nil {
				t.Fatalf("%s document %d: %v", f, i+1, err)
			}
			newObj := kinds[tm.APIVersion+"/"+tm.Kind]
			if newObj == nil {
				t.Fatalf("%s document %d: no upstream type known for %s %s", f, i+1, tm.APIVersion, tm.Kind)
			}
			obj := newObj()
			if err := yaml.UnmarshalStrict([]byte(doc), obj); err != nil {
				t.Fatalf("%s document %d (%s): %v", f, i+1, tm.Kind, err)
			}
			meta := obj.(metav1.ObjectMetaAccessor).GetObjectMeta()
			key := tm.Kind + "/" + meta.GetNamespace() + "/" + meta.GetName()
			if _, dup := m[key]; dup {
				t.Fatalf("%s: %s twice", f, key)
			}
			m[key] = obj
		}
	}
	return m
}

// TestStrictDecodeRefusesUnknownFields: the decoder really is strict.
func TestStrictDecodeRefusesUnknownFields(t *testing.T) {
	doc := "apiVersion: v1\nkind: Service\nmetadata:\n  name: x\nspec:\n  selectr: {a: b}\n"
	if err := yaml.UnmarshalStrict([]byte(doc), &corev1.Service{}); err == nil || !strings.Contains(err.Error(), "selectr") {
		t.Errorf("a misspelt field decoded: %v", err)
	}
}

func mustSelect(t *testing.T, what string, sel map[string]string, podLabels map[string]string) {
	t.Helper()
	if len(sel) == 0 || !labels.SelectorFromSet(sel).Matches(labels.Set(podLabels)) {
		t.Errorf("%s selects %v, which does not match the pod labels %v", what, sel, podLabels)
	}
}

// flag returns the value after name in args ("" if absent).
func flag(args []string, name string) string {
	for i, a := range args {
		if a == name && i+1 < len(args) {
			return args[i+1]
		}
		if v, ok := strings.CutPrefix(a, name+"="); ok {
			return v
		}
	}
	return ""
}

func containerNamed(t *testing.T, spec corev1.PodSpec, name string) corev1.Container {
	t.Helper()
	for _, c := range append(spec.InitContainers, spec.Containers...) {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("no container %q", name)
	return corev1.Container{}
}

func portNumber(t *testing.T, c corev1.Container, name string) int32 {
	t.Helper()
	for _, p := range c.Ports {
		if p.Name == name {
			return p.ContainerPort
		}
	}
	t.Fatalf("container %s has no port named %q", c.Name, name)
	return 0
}

func env(c corev1.Container, name string) string {
	for _, e := range c.Env {
		if e.Name == name {
			return e.Value
		}
	}
	return ""
}

// TestManifestWiring checks how the objects refer to each other.
func TestManifestWiring(t *testing.T) {
	m := loadManifests(t)
	const ns = "siskin"
	dep := get[*appsv1.Deployment](t, m, "Deployment", ns, "siskin")
	pod := dep.Spec.Template
	mustSelect(t, "the Deployment", dep.Spec.Selector.MatchLabels, pod.Labels)
	if len(dep.Spec.Selector.MatchExpressions) > 0 {
		t.Errorf("Deployment selector has expressions; the checks here read matchLabels only")
	}
	svc := get[*corev1.Service](t, m, "Service", ns, "siskin")
	mustSelect(t, "the Service", svc.Spec.Selector, pod.Labels)
	serve := containerNamed(t, pod.Spec, "siskin")
	httpPort := portNumber(t, serve, "http")
	for _, p := range svc.Spec.Ports {
		if p.TargetPort.String() != "http" && p.TargetPort.IntValue() != int(httpPort) {
			t.Errorf("Service port %s targets %s, not the container's http port", p.Name, p.TargetPort.String())
		}
	}
	if got := flag(serve.Args, "--port"); got != strconv.Itoa(int(httpPort)) {
		t.Errorf("siskin listens on --port %q, the container port is %d", got, httpPort)
	}
	if flag(serve.Args, "--host") != "0.0.0.0" {
		t.Errorf("siskin must listen on all interfaces in a pod, --host is %q", flag(serve.Args, "--host"))
	}
	pdb := get[*policyv1.PodDisruptionBudget](t, m, "PodDisruptionBudget", ns, "siskin")
	mustSelect(t, "the PodDisruptionBudget", pdb.Spec.Selector.MatchLabels, pod.Labels)

	checkModelSource(t, pod.Spec, serve)
	checkResources(t, serve)
	checkGrace(t, pod.Spec, serve)
	checkPool(t, m, pod, httpPort)
	checkAutoscaling(t, m, dep)
}

// The init container pulls the model serve loads, into the same cache.
func checkModelSource(t *testing.T, spec corev1.PodSpec, serve corev1.Container) {
	pull := containerNamed(t, spec, "pull")
	if len(pull.Args) != 2 || pull.Args[0] != "pull" || pull.Args[1] != flag(serve.Args, "-m") {
		t.Errorf("init container runs %v; serve loads -m %s", pull.Args, flag(serve.Args, "-m"))
	}
	if pull.Image != serve.Image {
		t.Errorf("init image %s, serve image %s", pull.Image, serve.Image)
	}
	if env(pull, "HF_HOME") == "" || env(pull, "HF_HOME") != env(serve, "HF_HOME") {
		t.Errorf("HF_HOME: pull %q, serve %q", env(pull, "HF_HOME"), env(serve, "HF_HOME"))
	}
	mounted := func(c corev1.Container, path string) string {
		for _, v := range c.VolumeMounts {
			if v.MountPath == path {
				return v.Name
			}
		}
		return ""
	}
	if v := mounted(pull, env(pull, "HF_HOME")); v == "" || v != mounted(serve, env(serve, "HF_HOME")) {
		t.Errorf("HF_HOME is not the same volume in both containers")
	}
	if mounted(serve, env(serve, "SISKIN_CACHE_DIR")) == "" {
		t.Errorf("SISKIN_CACHE_DIR %q is not a mounted volume (the root filesystem is read-only)", env(serve, "SISKIN_CACHE_DIR"))
	}
}

// --threads is the CPU limit, and equals what siskin itself derives from
// that quota (device.Info.DefaultThreads with the cgroup's CPUs).
func checkResources(t *testing.T, serve corev1.Container) {
	lim, req := serve.Resources.Limits, serve.Resources.Requests
	cpu := lim.Cpu().AsApproximateFloat64()
	if cpu <= 0 || lim.Memory().IsZero() {
		t.Fatalf("siskin needs CPU and memory limits, has %v", lim)
	}
	if !req.Cpu().Equal(*lim.Cpu()) || !req.Memory().Equal(*lim.Memory()) {
		t.Errorf("requests %v differ from limits %v (not Guaranteed QoS)", req, lim)
	}
	threads, err := strconv.Atoi(flag(serve.Args, "--threads"))
	if err != nil || threads != int(math.Ceil(cpu)) {
		t.Errorf("--threads %q does not match the CPU limit %v", flag(serve.Args, "--threads"), cpu)
	}
	info := &device.Info{Cores: device.Cores{Physical: 64, Logical: 128, Usable: 128, CgroupCPUs: cpu}}
	if d := info.DefaultThreads(); d != threads {
		t.Errorf("siskin would pick %d threads under a %v-CPU quota, --threads says %d", d, cpu, threads)
	}
}

func checkGrace(t *testing.T, spec corev1.PodSpec, serve corev1.Container) {
	grace, err := time.ParseDuration(flag(serve.Args, "--shutdown-grace"))
	if err != nil {
		t.Fatalf("--shutdown-grace: %v", err)
	}
	if spec.TerminationGracePeriodSeconds == nil || time.Duration(*spec.TerminationGracePeriodSeconds)*time.Second <= grace {
		t.Errorf("terminationGracePeriodSeconds must exceed --shutdown-grace %v", grace)
	}
	if serve.ReadinessProbe == nil || serve.LivenessProbe == nil || serve.ReadinessProbe.HTTPGet == nil || serve.LivenessProbe.HTTPGet == nil {
		t.Fatal("siskin needs HTTP readiness and liveness probes")
	}
	if serve.ReadinessProbe.HTTPGet.Path == serve.LivenessProbe.HTTPGet.Path {
		t.Errorf("readiness and liveness probe the same route %s", serve.LivenessProbe.HTTPGet.Path)
	}
	for _, p := range []*corev1.Probe{serve.ReadinessProbe, serve.LivenessProbe} {
		portNumber(t, serve, p.HTTPGet.Port.String())
	}
	probeRoutes(t, serve.ReadinessProbe.HTTPGet.Path, serve.LivenessProbe.HTTPGet.Path)
}

// checkPool: the InferencePool selects the siskin pods on their port, the
// picker it names is the EPP Service, the EPP serves this pool, and the
// route sends the API to the pool.
func checkPool(t *testing.T, m manifests, pod corev1.PodTemplateSpec, httpPort int32) {
	const ns = "siskin"
	pool := get[*infv1.InferencePool](t, m, "InferencePool", ns, "siskin")
	sel := map[string]string{}
	for k, v := range pool.Spec.Selector.MatchLabels {
		sel[string(k)] = string(v)
	}
	mustSelect(t, "the InferencePool", sel, pod.Labels)
	if len(pool.Spec.TargetPorts) != 1 || int32(pool.Spec.TargetPorts[0].Number) != httpPort {
		t.Errorf("InferencePool targets %v, siskin listens on %d", pool.Spec.TargetPorts, httpPort)
	}
	ref := pool.Spec.EndpointPickerRef
	if ref.Kind != "Service" || ref.Port == nil {
		t.Fatalf("endpointPickerRef %+v: want a Service and a port", ref)
	}
	eppSvc := get[*corev1.Service](t, m, "Service", ns, string(ref.Name))
	epp := get[*appsv1.Deployment](t, m, "Deployment", ns, "siskin-epp")
	mustSelect(t, "the EPP Deployment", epp.Spec.Selector.MatchLabels, epp.Spec.Template.Labels)
	mustSelect(t, "the EPP Service", eppSvc.Spec.Selector, epp.Spec.Template.Labels)
	picker := containerNamed(t, epp.Spec.Template.Spec, "epp")
	found := false
	for _, p := range eppSvc.Spec.Ports {
		if p.Port == int32(ref.Port.Number) {
			found = true
			if portNumber(t, picker, p.TargetPort.String()) != 9002 {
				t.Errorf("EPP Service port %d does not reach the picker's ext-proc port 9002", p.Port)
			}
		}
	}
	if !found {
		t.Errorf("EPP Service has no port %d", ref.Port.Number)
	}
	for flagName, want := range map[string]string{"--pool-name": pool.Name, "--pool-namespace": pool.Namespace, "--pool-group": infv1.GroupVersion.Group} {
		if got := flag(picker.Args, flagName); got != want {
			t.Errorf("EPP %s %q, want %q", flagName, got, want)
		}
	}
	checkPickerConfig(t, m, epp, picker)
	checkPickerMetrics(t, picker)
	sa := epp.Spec.Template.Spec.ServiceAccountName
	get[*corev1.ServiceAccount](t, m, "ServiceAccount", ns, sa)
	rb := get[*rbacv1.RoleBinding](t, m, "RoleBinding", ns, sa)
	if len(rb.Subjects) != 1 || rb.Subjects[0].Name != sa {
		t.Errorf("RoleBinding %s binds %v, not the EPP's service account", rb.Name, rb.Subjects)
	}
	role := get[*rbacv1.Role](t, m, "Role", ns, rb.RoleRef.Name)
	canWatch := func(group, resource string) bool {
		for _, r := range role.Rules {
			if slices.Contains(r.APIGroups, group) && slices.Contains(r.Resources, resource) && slices.Contains(r.Verbs, "watch") {
				return true
			}
		}
		return false
	}
	if !canWatch("", "pods") || !canWatch(infv1.GroupVersion.Group, "inferencepools") {
		t.Errorf("the EPP's Role cannot watch pods and inferencepools: %v", role.Rules)
	}

	route := get[*gwv1.HTTPRoute](t, m, "HTTPRoute", ns, "siskin")
	toPool := false
	for _, r := range route.Spec.Rules {
		for _, b := range r.BackendRefs {
			if b.Group != nil && string(*b.Group) == infv1.GroupVersion.Group && b.Kind != nil && *b.Kind == "InferencePool" && string(b.Name) == pool.Name {
				toPool = true
			}
		}
	}
	if !toPool {
		t.Error("the HTTPRoute has no backendRef to the InferencePool")
	}
	for _, p := range route.Spec.ParentRefs {
		get[*gwv1.Gateway](t, m, "Gateway", ns, string(p.Name))
	}
}

// The EPP's --config-file is a key of the ConfigMap mounted there, and
// decodes strictly into its EndpointPickerConfig with the scorers siskin
// feeds.
func checkPickerConfig(t *testing.T, m manifests, epp *appsv1.Deployment, picker corev1.Container) {
	file := flag(picker.Args, "--config-file")
	var cm *corev1.ConfigMap
	for _, vm := range picker.VolumeMounts {
		if filepath.Dir(file) != filepath.Clean(vm.MountPath) {
			continue
		}
		for _, v := range epp.Spec.Template.Spec.Volumes {
			if v.Name == vm.Name && v.ConfigMap != nil {
				cm = get[*corev1.ConfigMap](t, m, "ConfigMap", epp.Namespace, v.ConfigMap.Name)
			}
		}
	}
	if cm == nil {
		t.Fatalf("--config-file %s is not in a mounted ConfigMap", file)
	}
	text, ok := cm.Data[filepath.Base(file)]
	if !ok {
		t.Fatalf("ConfigMap %s has no key %s", cm.Name, filepath.Base(file))
	}
	var cfg eppconfig.EndpointPickerConfig
	if err := yaml.UnmarshalStrict([]byte(text), &cfg); err != nil {
		t.Fatalf("EndpointPickerConfig: %v", err)
	}
	declared := map[string]bool{}
	for _, p := range cfg.Plugins {
		declared[p.Type] = true
	}
	for _, want := range []string{"queue-scorer", "kv-cache-utilization-scorer", "prefix-cache-scorer", "max-score-picker"} {
		if !declared[want] {
			t.Errorf("EndpointPickerConfig lacks %s", want)
		}
	}
	for _, prof := range cfg.SchedulingProfiles {
		for _, p := range prof.Plugins {
			if !declared[p.PluginRef] {
				t.Errorf("profile %s refers to undeclared plugin %s", prof.Name, p.PluginRef)
			}
		}
	}
}

// siskinServer serves the tiny test model the way siskin serve does.
func siskinServer(t *testing.T) *server.Server {
	t.Helper()
	lm, err := load.Open(testdata.Path(t, "llm", "tiny", "models", "spark2_5-tiny-f32.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	eng := engine.New(lm.Model, engine.Config{MaxNumSeqs: 2, MaxNumBatchedTokens: 64, KVCacheBytes: 8 << 20})
	t.Cleanup(func() { eng.Close(); lm.Close() })
	return server.New(server.Config{ModelName: "tiny"}, eng, lm.Tokenizer, nil)
}

// probeRoutes: the readiness route is 200 when serving and 503 while
// draining (and loading); the liveness route is 200 in all three.
func probeRoutes(t *testing.T, ready, live string) {
	s := siskinServer(t)
	ts := httptest.NewServer(s.Handler())
	defer ts.Close()
	loading := httptest.NewServer(server.LoadingHandler())
	defer loading.Close()
	status := func(base, path string) int {
		resp, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if a, b, c := status(ts.URL, ready), status(ts.URL, live), status(loading.URL, live); a != 200 || b != 200 || c != 200 {
		t.Errorf("serving: readiness %s %d, liveness %s %d; loading: liveness %d; want 200s", ready, a, live, b, c)
	}
	if code := status(loading.URL, ready); code != 503 {
		t.Errorf("loading: readiness %s %d, want 503", ready, code)
	}
	if err := s.Drain(context.Background()); err != nil {
		t.Fatal(err)
	}
	if a, b := status(ts.URL, ready), status(ts.URL, live); a != 503 || b != 200 {
		t.Errorf("draining: readiness %s %d (want 503), liveness %s %d (want 200)", ready, a, live, b)
	}
}

// metricNames scrapes the names siskin's /metrics exports.
func metricNames(t *testing.T) map[string]bool {
	t.Helper()
	ts := httptest.NewServer(siskinServer(t).Handler())
	defer ts.Close()
	resp, err := http.Get(ts.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	names := map[string]bool{}
	for _, line := range strings.Split(string(body), "\n") {
		if f := strings.Fields(line); len(f) >= 3 && f[0] == "#" && f[1] == "TYPE" {
			names[f[2]] = true
		}
	}
	return names
}

// The metric flags of the EPP name metrics siskin exports.
func checkPickerMetrics(t *testing.T, picker corev1.Container) {
	names := metricNames(t)
	for _, f := range []string{"--total-queued-requests-metric", "--kv-cache-usage-percentage-metric", "--lora-info-metric", "--cache-info-metric"} {
		if v := flag(picker.Args, f); !names[v] {
			t.Errorf("EPP %s %q is not a metric siskin exports", f, v)
		}
	}
}

// adapterConfig is prometheus-adapter's discovery configuration (the
// fields of its config.yaml this rule uses), copied faithfully so that
// the rule decodes strictly; the adapter's Go module is not imported
// (it drags in the whole apiserver).
type adapterConfig struct {
	Rules []struct {
		SeriesQuery string `json:"seriesQuery"`
		Resources   struct {
			Overrides map[string]struct {
				Group    string `json:"group,omitempty"`
				Resource string `json:"resource"`
			} `json:"overrides,omitempty"`
			Template string `json:"template,omitempty"`
		} `json:"resources"`
		Name struct {
			Matches string `json:"matches"`
			As      string `json:"as"`
		} `json:"name"`
		MetricsQuery string `json:"metricsQuery"`
	} `json:"rules"`
}

// checkAutoscaling: the HPA scales the Deployment on a per-pod metric the
// adapter rule makes from a metric siskin exports.
func checkAutoscaling(t *testing.T, m manifests, dep *appsv1.Deployment) {
	hpa := get[*autoscalingv2.HorizontalPodAutoscaler](t, m, "HorizontalPodAutoscaler", dep.Namespace, "siskin")
	if r := hpa.Spec.ScaleTargetRef; r.Kind != "Deployment" || r.Name != dep.Name || r.APIVersion != "apps/v1" {
		t.Errorf("HPA scales %+v", r)
	}
	if len(hpa.Spec.Metrics) != 1 || hpa.Spec.Metrics[0].Pods == nil {
		t.Fatalf("HPA metrics %+v: want one Pods metric", hpa.Spec.Metrics)
	}
	want := hpa.Spec.Metrics[0].Pods.Metric.Name
	cm := get[*corev1.ConfigMap](t, m, "ConfigMap", "monitoring", "siskin-prometheus-adapter")
	var cfg adapterConfig
	if err := yaml.UnmarshalStrict([]byte(cm.Data["config.yaml"]), &cfg); err != nil {
		t.Fatalf("prometheus-adapter config: %v", err)
	}
	names := metricNames(t)
	found := false
	for _, r := range cfg.Rules {
		if r.Name.As != want {
			continue
		}
		found = true
		series := regexp.MustCompile(`^[a-zA-Z_:][a-zA-Z0-9_:]*`).FindString(r.SeriesQuery)
		if !names[series] || !regexp.MustCompile(r.Name.Matches).MatchString(series) {
			t.Errorf("adapter rule for %s reads %q, which siskin does not export or the rule does not rename", want, series)
		}
		if r.Resources.Overrides["pod"].Resource != "pod" || r.Resources.Overrides["namespace"].Resource != "namespace" {
			t.Errorf("adapter rule for %s does not map the pod and namespace labels", want)
		}
		if !strings.Contains(r.MetricsQuery, "<<.Series>>") || !strings.Contains(r.MetricsQuery, "<<.LabelMatchers>>") {
			t.Errorf("adapter metricsQuery %q lacks <<.Series>> or <<.LabelMatchers>>", r.MetricsQuery)
		}
	}
	if !found {
		t.Errorf("no prometheus-adapter rule serves %s", want)
	}
}

// TestDockerfileStatic: the final stage is FROM scratch with the binary
// and CA certificates, built without cgo.
func TestDockerfileStatic(t *testing.T) {
	raw, err := os.ReadFile("../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	var stages [][]string
	for _, line := range strings.Split(string(raw), "\n") {
		line = strings.TrimSpace(line)
		if strings.HasPrefix(line, "FROM ") {
			stages = append(stages, nil)
		}
		if len(stages) > 0 && line != "" && !strings.HasPrefix(line, "#") {
			stages[len(stages)-1] = append(stages[len(stages)-1], line)
		}
	}
	if len(stages) < 2 {
		t.Fatalf("want a build stage and a final stage, got %d stages", len(stages))
	}
	final := strings.Join(stages[len(stages)-1], "\n")
	for _, want := range []string{"FROM scratch", "/etc/ssl/certs/ca-certificates.crt", "ENTRYPOINT [\"/siskin\"]", "USER "} {
		if !strings.Contains(final, want) {
			t.Errorf("final stage lacks %q:\n%s", want, final)
		}
	}
	if !bytes.Contains(raw, []byte("CGO_ENABLED=0")) {
		t.Error("the binary is not built with CGO_ENABLED=0")
	}
}
