package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/yaml"

	"github.com/snapcopier/copier/leasekeeper"
)

// kubeObjects are the manifests of deploy/kubernetes, decoded.
type kubeObjects struct {
	deployments []appsv1.Deployment
	pdbs        []policyv1.PodDisruptionBudget
	services    []corev1.Service
	secrets     []corev1.Secret
}

// decodeKube decodes every document of every manifest strictly (an unknown or misspelt
// field fails) into the k8s.io/api type of its apiVersion and kind.
func decodeKube(t *testing.T) kubeObjects {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(repoRoot, "deploy", "kubernetes", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no manifests: %v", err)
	}
	var out kubeObjects
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for i, doc := range bytes.Split(raw, []byte("\n---")) {
			where := filepath.Base(f) + " document " + strconv.Itoa(i+1)
			var tm metav1.TypeMeta
			if err := yaml.Unmarshal(doc, &tm); err != nil {
				t.Fatalf("%s: %v", where, err)
			}
			decode := func(into any) {
				if err := yaml.UnmarshalStrict(doc, into); err != nil {
					t.Fatalf("%s (%s %s): %v", where, tm.APIVersion, tm.Kind, err)
				}
			}
			switch tm.APIVersion + " " + tm.Kind {
			case "apps/v1 Deployment":
				var d appsv1.Deployment
				decode(&d)
				out.deployments = append(out.deployments, d)
			case "policy/v1 PodDisruptionBudget":
				var p policyv1.PodDisruptionBudget
				decode(&p)
				out.pdbs = append(out.pdbs, p)
			case "v1 Service":
				var s corev1.Service
				decode(&s)
				out.services = append(out.services, s)
			case "v1 Secret":
				var s corev1.Secret
				decode(&s)
				out.secrets = append(out.secrets, s)
			default:
				t.Fatalf("%s: unexpected %q %q", where, tm.APIVersion, tm.Kind)
			}
		}
	}
	if len(out.deployments) != 1 || len(out.pdbs) != 1 || len(out.services) != 1 || len(out.secrets) != 1 {
		t.Fatalf("want one Deployment, PodDisruptionBudget, Service and Secret; got %d %d %d %d",
			len(out.deployments), len(out.pdbs), len(out.services), len(out.secrets))
	}
	return out
}

// TestKubernetesManifests: the manifests decode strictly into k8s.io/api types and agree
// with the node: the grace period exceeds the shutdown budget, readiness is /readyz and
// liveness /healthz on the port --http listens on, pods spread over machines, the PDB
// and the Service select the pods, every secret key used exists, every variable is a
// flag of copierd run, and the pod runs unprivileged.
func TestKubernetesManifests(t *testing.T) {
	k := decodeKube(t)
	d := k.deployments[0]
	pod := d.Spec.Template.Spec
	podLabels := labels.Set(d.Spec.Template.Labels)
	if sel, err := metav1.LabelSelectorAsSelector(d.Spec.Selector); err != nil || !sel.Matches(podLabels) {
		t.Fatalf("the Deployment's selector does not match its pods: %v", err)
	}
	if len(pod.Containers) != 1 {
		t.Fatalf("%d containers, want 1", len(pod.Containers))
	}
	c := pod.Containers[0]
	if strings.Join(c.Args, " ") != "run" {
		t.Errorf("args %q, want [run]", c.Args)
	}

	flags := runFlagNames(t)
	env := map[string]corev1.EnvVar{}
	for _, e := range c.Env {
		if !flags[e.Name] && e.Name != "GOMEMLIMIT" {
			t.Errorf("env %s is no flag of copierd run", e.Name)
		}
		env[e.Name] = e
	}
	// The runtime's soft memory limit sits below the container's hard one, with room for
	// what is not heap (stacks, the runtime's own): else the collector would not start
	// before the kernel kills the pod.
	if v, ok := env["GOMEMLIMIT"]; ok {
		soft, err := parseGoMemLimit(v.Value)
		hard := c.Resources.Limits.Memory().Value()
		if err != nil || hard == 0 || soft > hard*9/10 {
			t.Errorf("GOMEMLIMIT %q (%d bytes, %v) must be at most 90 %% of the memory limit (%d bytes)", v.Value, soft, err, hard)
		}
	}
	budget := leasekeeper.DefaultShutdownTimeout
	if v, ok := env["COPIER_SHUTDOWN_TIMEOUT"]; ok {
		var err error
		if budget, err = time.ParseDuration(v.Value); err != nil {
			t.Fatal(err)
		}
	}
	if pod.TerminationGracePeriodSeconds == nil {
		t.Error("terminationGracePeriodSeconds missing (Kubernetes' default, 30 s, is the whole shutdown budget)")
	} else if grace := time.Duration(*pod.TerminationGracePeriodSeconds) * time.Second; grace <= budget {
		t.Errorf("terminationGracePeriodSeconds %v must exceed the shutdown budget %v", grace, budget)
	}
	if budget != leasekeeper.DefaultShutdownTimeout {
		t.Errorf("COPIER_SHUTDOWN_TIMEOUT %v differs from the node's default %v: keep them together", budget, leasekeeper.DefaultShutdownTimeout)
	}
	for _, req := range []string{"COPIER_DATABASE_URL", "COPIER_PLATFORM", "COPIER_BROKER", "COPIER_HTTP"} {
		if _, ok := env[req]; !ok {
			t.Errorf("env %s missing", req)
		}
	}
	if url := env["COPIER_DATABASE_URL"]; url.ValueFrom == nil || url.ValueFrom.SecretKeyRef == nil {
		t.Error("COPIER_DATABASE_URL must come from the Secret")
	}
	sec := k.secrets[0]
	for _, e := range c.Env {
		if e.ValueFrom == nil || e.ValueFrom.SecretKeyRef == nil {
			continue
		}
		ref := e.ValueFrom.SecretKeyRef
		if ref.Name != sec.Name {
			t.Errorf("env %s names secret %q, not %q", e.Name, ref.Name, sec.Name)
		} else if _, ok := sec.StringData[ref.Key]; !ok {
			t.Errorf("env %s names key %q that secret %s lacks", e.Name, ref.Key, sec.Name)
		}
	}

	// Probes on the port --http listens on.
	if err := checkListenAddr("http", env["COPIER_HTTP"].Value); err != nil {
		t.Fatal(err)
	}
	_, port, _ := strings.Cut(env["COPIER_HTTP"].Value, ":")
	var httpPort corev1.ContainerPort
	for _, p := range c.Ports {
		if p.Name == "http" {
			httpPort = p
		}
	}
	if httpPort.Name == "" || port != strconv.Itoa(int(httpPort.ContainerPort)) {
		t.Fatalf("container port http %+v is not COPIER_HTTP's port %s", httpPort, port)
	}
	for _, pr := range []struct {
		name  string
		probe *corev1.Probe
		path  string
	}{{"readiness", c.ReadinessProbe, "/readyz"}, {"liveness", c.LivenessProbe, "/healthz"}} {
		if pr.probe == nil || pr.probe.HTTPGet == nil || pr.probe.HTTPGet.Path != pr.path || pr.probe.HTTPGet.Port.String() != "http" {
			t.Errorf("%s probe must GET %s on port http: %+v", pr.name, pr.path, pr.probe)
		}
	}

	// Spread and disruption.
	aff := pod.Affinity
	if aff == nil || aff.PodAntiAffinity == nil || len(aff.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution)+len(aff.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution) == 0 {
		t.Fatal("no pod anti-affinity")
	}
	for _, w := range aff.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution {
		if sel, err := metav1.LabelSelectorAsSelector(w.PodAffinityTerm.LabelSelector); err != nil || !sel.Matches(podLabels) || w.PodAffinityTerm.TopologyKey != "kubernetes.io/hostname" {
			t.Errorf("anti-affinity term does not keep the pods apart by host: %+v", w.PodAffinityTerm)
		}
	}
	if ru := d.Spec.Strategy.RollingUpdate; ru == nil || ru.MaxUnavailable == nil || ru.MaxUnavailable.IntValue() != 0 {
		t.Error("a rolling update must start the new pod before stopping an old one (maxUnavailable: 0)")
	}
	pdb := k.pdbs[0]
	if sel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector); err != nil || !sel.Matches(podLabels) {
		t.Errorf("the PodDisruptionBudget does not select the pods: %v", err)
	}
	if pdb.Spec.MaxUnavailable == nil || pdb.Spec.MaxUnavailable.IntValue() != 1 {
		t.Errorf("PodDisruptionBudget maxUnavailable %v, want 1", pdb.Spec.MaxUnavailable)
	}
	svc := k.services[0]
	if !labels.SelectorFromSet(svc.Spec.Selector).Matches(podLabels) || len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].TargetPort.String() != "http" {
		t.Errorf("the metrics Service does not reach the pods' http port: %+v", svc.Spec)
	}

	// Unprivileged.
	psc, sc := pod.SecurityContext, c.SecurityContext
	if psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot || psc.RunAsUser == nil || *psc.RunAsUser == 0 {
		t.Error("the pod must run as a non-root user")
	}
	if sc == nil || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem ||
		sc.Capabilities == nil || len(sc.Capabilities.Drop) != 1 || sc.Capabilities.Drop[0] != "ALL" {
		t.Errorf("container security context too permissive: %+v", sc)
	}
}

// parseGoMemLimit reads GOMEMLIMIT as the runtime does: bytes with an optional B, KiB,
// MiB, GiB or TiB suffix.
func parseGoMemLimit(v string) (int64, error) {
	units := []struct {
		suffix string
		factor int64
	}{{"TiB", 1 << 40}, {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}, {"B", 1}}
	factor := int64(1)
	for _, u := range units {
		if strings.HasSuffix(v, u.suffix) {
			v, factor = strings.TrimSuffix(v, u.suffix), u.factor
			break
		}
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("not a size: %q", v)
	}
	return n * factor, nil
}
