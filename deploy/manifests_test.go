package deploy

// Every Kubernetes manifest shipped here is decoded strictly into the
// Kubernetes API's own Go types (k8s.io/api): a misspelled or unknown
// field, a duplicate key or a value of the wrong type fails, as the API
// server's strict field validation would refuse it. No schema is fetched:
// the types are the schema. This package is test-only, so these
// dependencies never reach the daemon's binary.

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

// The agent-sandbox kinds (extensions.agents.x-k8s.io/v1beta1), as the
// project's Go API declares them (kubernetes-sigs/agent-sandbox,
// extensions/api/v1beta1 and api/v1beta1): only the spec, which is what
// a manifest sets; the pod template and network rules are the Kubernetes
// types themselves, decoded as strictly as the rest.
type (
	sandboxPodMetadata struct {
		Labels      map[string]string `json:"labels,omitempty"`
		Annotations map[string]string `json:"annotations,omitempty"`
	}
	sandboxPodTemplate struct {
		Spec     corev1.PodSpec     `json:"spec"`
		Metadata sandboxPodMetadata `json:"metadata"`
	}
	sandboxVolumeClaimTemplate struct {
		Metadata struct {
			Name        string            `json:"name,omitempty"`
			Labels      map[string]string `json:"labels,omitempty"`
			Annotations map[string]string `json:"annotations,omitempty"`
		} `json:"metadata"`
		Spec corev1.PersistentVolumeClaimSpec `json:"spec"`
	}
	sandboxTemplate struct {
		metav1.TypeMeta `json:",inline"`
		Metadata        metav1.ObjectMeta `json:"metadata"`
		Spec            struct {
			PodTemplate          sandboxPodTemplate           `json:"podTemplate"`
			VolumeClaimTemplates []sandboxVolumeClaimTemplate `json:"volumeClaimTemplates,omitempty"`
			Service              *bool                        `json:"service,omitempty"`
			NetworkPolicy        *struct {
				Ingress []networkingv1.NetworkPolicyIngressRule `json:"ingress,omitempty"`
				Egress  []networkingv1.NetworkPolicyEgressRule  `json:"egress,omitempty"`
			} `json:"networkPolicy,omitempty"`
			NetworkPolicyManagement    string `json:"networkPolicyManagement,omitempty"`
			EnvVarsInjectionPolicy     string `json:"envVarsInjectionPolicy,omitempty"`
			VolumeClaimTemplatesPolicy string `json:"volumeClaimTemplatesPolicy,omitempty"`
		} `json:"spec"`
	}
	sandboxWarmPool struct {
		metav1.TypeMeta `json:",inline"`
		Metadata        metav1.ObjectMeta `json:"metadata"`
		Spec            struct {
			Replicas    *int32 `json:"replicas,omitempty"`
			TemplateRef struct {
				Name string `json:"name"`
			} `json:"sandboxTemplateRef,omitempty"`
			UpdateStrategy *struct {
				Type string `json:"type,omitempty"`
			} `json:"updateStrategy,omitempty"`
		} `json:"spec"`
	}
	sandboxClaim struct {
		metav1.TypeMeta `json:",inline"`
		Metadata        metav1.ObjectMeta `json:"metadata"`
		Spec            struct {
			WarmPoolRef struct {
				Name string `json:"name"`
			} `json:"warmPoolRef"`
			Lifecycle *struct {
				ShutdownTime            *metav1.Time `json:"shutdownTime,omitempty"`
				TTLSecondsAfterFinished *int32       `json:"ttlSecondsAfterFinished,omitempty"`
				ShutdownPolicy          string       `json:"shutdownPolicy,omitempty"`
			} `json:"lifecycle,omitempty"`
			AdditionalPodMetadata sandboxPodMetadata `json:"additionalPodMetadata,omitempty"`
			Env                   []struct {
				Name          string `json:"name"`
				Value         string `json:"value"`
				ContainerName string `json:"containerName,omitempty"`
			} `json:"env,omitempty"`
			VolumeClaimTemplates []sandboxVolumeClaimTemplate `json:"volumeClaimTemplates,omitempty"`
		} `json:"spec"`
	}
)

// newObject returns the typed object a document of apiVersion and kind
// decodes into; an unknown kind is an error (it would not be validated).
func newObject(apiVersion, kind string) (any, error) {
	switch apiVersion + " " + kind {
	case "v1 Secret":
		return &corev1.Secret{}, nil
	case "v1 Service":
		return &corev1.Service{}, nil
	case "v1 ConfigMap":
		return &corev1.ConfigMap{}, nil
	case "apps/v1 StatefulSet":
		return &appsv1.StatefulSet{}, nil
	case "networking.k8s.io/v1 NetworkPolicy":
		return &networkingv1.NetworkPolicy{}, nil
	case "policy/v1 PodDisruptionBudget":
		return &policyv1.PodDisruptionBudget{}, nil
	case "extensions.agents.x-k8s.io/v1beta1 SandboxTemplate":
		return &sandboxTemplate{}, nil
	case "extensions.agents.x-k8s.io/v1beta1 SandboxWarmPool":
		return &sandboxWarmPool{}, nil
	case "extensions.agents.x-k8s.io/v1beta1 SandboxClaim":
		return &sandboxClaim{}, nil
	}
	return nil, fmt.Errorf("no API type known here for apiVersion %q kind %q: add it to newObject", apiVersion, kind)
}

// document is one YAML document of a stream and the object it decoded to.
type document struct {
	kind, name string
	obj        any
}

var docSep = regexp.MustCompile(`(?m)^---[ \t]*$`)

// decodeStrict splits a YAML stream into documents and decodes each
// strictly into its type.
func decodeStrict(stream []byte) ([]document, error) {
	var docs []document
	for i, raw := range docSep.Split(string(stream), -1) {
		var head struct {
			APIVersion string `json:"apiVersion"`
			Kind       string `json:"kind"`
			Metadata   struct {
				Name string `json:"name"`
			} `json:"metadata"`
		}
		if err := yaml.Unmarshal([]byte(raw), &head); err != nil {
			return nil, fmt.Errorf("document %d: %w", i, err)
		}
		if head.APIVersion == "" && head.Kind == "" {
			if strings.TrimSpace(stripComments(raw)) != "" {
				return nil, fmt.Errorf("document %d has no apiVersion or kind", i)
			}
			continue // comments only
		}
		obj, err := newObject(head.APIVersion, head.Kind)
		if err != nil {
			return nil, fmt.Errorf("document %d (%s): %w", i, head.Metadata.Name, err)
		}
		// As the API server decodes with strict field validation: YAML
		// with a duplicate key is refused, and the JSON is decoded case-
		// sensitively (encoding/json would take "containerport" for
		// containerPort) with unknown and duplicate fields refused.
		js, err := yaml.YAMLToJSONStrict([]byte(raw))
		if err != nil {
			return nil, fmt.Errorf("%s %s: %w", head.Kind, head.Metadata.Name, err)
		}
		strict, err := kjson.UnmarshalStrict(js, obj)
		if err = errors.Join(append(strict, err)...); err != nil {
			return nil, fmt.Errorf("%s %s: %w", head.Kind, head.Metadata.Name, err)
		}
		docs = append(docs, document{kind: head.Kind, name: head.Metadata.Name, obj: obj})
	}
	if len(docs) == 0 {
		return nil, fmt.Errorf("no documents")
	}
	return docs, nil
}

func stripComments(s string) string {
	var b strings.Builder
	for _, line := range strings.Split(s, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(line), "#") {
			b.WriteString(line + "\n")
		}
	}
	return b.String()
}

// manifestFiles are the Kubernetes files shipped: the chart's renders and
// the agent-sandbox example.
func manifestFiles(t *testing.T) []string {
	t.Helper()
	var files []string
	for _, pattern := range []string{"kubernetes/*.yaml", "agent-sandbox/*.yaml"} {
		m, err := filepath.Glob(pattern)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, m...)
	}
	if len(files) < 4 {
		t.Fatalf("expected the two renders and the agent-sandbox files, found %v", files)
	}
	return files
}

// isolateCaps are exactly the capabilities --isolate needs: those
// session.CheckIsolationPrivilege checks, and SYS_ADMIN for the sessions'
// mount and IPC namespaces and the cgroup remount.
var isolateCaps = []corev1.Capability{"SETUID", "SETGID", "CHOWN", "KILL", "DAC_OVERRIDE", "SYS_PTRACE", "SYS_ADMIN"}

// TestManifestsDecodeStrictly decodes every shipped manifest into the API
// types and checks what each variant promises: the pod-per-sandbox files
// run trl as non-root with every capability dropped and none added; the
// isolated one runs it as root with exactly isolateCaps and --isolate.
func TestManifestsDecodeStrictly(t *testing.T) {
	for _, file := range manifestFiles(t) {
		t.Run(file, func(t *testing.T) {
			b, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			docs, err := decodeStrict(b)
			if err != nil {
				t.Fatal(err)
			}
			checkVariant(t, docs, strings.Contains(file, "isolated"))
		})
	}
}

// podSpecs returns the pod specs of docs with where each is from.
func podSpecs(docs []document) map[string]*corev1.PodSpec {
	specs := map[string]*corev1.PodSpec{}
	for _, d := range docs {
		switch o := d.obj.(type) {
		case *appsv1.StatefulSet:
			specs[d.kind+" "+d.name] = &o.Spec.Template.Spec
		case *sandboxTemplate:
			specs[d.kind+" "+d.name] = &o.Spec.PodTemplate.Spec
		}
	}
	return specs
}

func checkVariant(t *testing.T, docs []document, isolated bool) {
	t.Helper()
	for where, spec := range podSpecs(docs) {
		var trl *corev1.Container
		for i := range spec.Containers {
			c := &spec.Containers[i]
			if c.SecurityContext == nil || c.SecurityContext.Capabilities == nil ||
				!slices.Equal(c.SecurityContext.Capabilities.Drop, []corev1.Capability{"ALL"}) {
				t.Errorf("%s: container %s does not drop ALL capabilities", where, c.Name)
			}
			if c.Name == "trl" {
				trl = c
			}
		}
		if trl == nil {
			t.Fatalf("%s has no container named trl", where)
		}
		added := trl.SecurityContext.Capabilities.Add
		hasIsolate := slices.Contains(trl.Args, "--isolate")
		if isolated {
			if !slices.Equal(sorted(added), sorted(isolateCaps)) {
				t.Errorf("%s: --isolate needs exactly %v, the manifest adds %v", where, isolateCaps, added)
			}
			if !hasIsolate {
				t.Errorf("%s: the isolated variant does not pass --isolate: %v", where, trl.Args)
			}
			if ctx := spec.SecurityContext; ctx == nil || ctx.RunAsUser == nil || *ctx.RunAsUser != 0 {
				t.Errorf("%s: --isolate needs the daemon to run as root (uid 0)", where)
			}
		} else {
			if len(added) != 0 {
				t.Errorf("%s: the pod-per-sandbox variant adds capabilities %v", where, added)
			}
			if hasIsolate {
				t.Errorf("%s: --isolate without its capabilities would refuse to start", where)
			}
			if ctx := spec.SecurityContext; ctx == nil || ctx.RunAsNonRoot == nil || !*ctx.RunAsNonRoot {
				t.Errorf("%s: the pod-per-sandbox variant must run as non-root", where)
			}
		}
	}
	if len(podSpecs(docs)) == 0 {
		for _, d := range docs {
			if d.kind == "SandboxClaim" {
				return // a claim carries no pod
			}
		}
		t.Error("no workload in the file")
	}
}

func sorted(c []corev1.Capability) []corev1.Capability {
	return slices.Sorted(slices.Values(c))
}

// TestStrictDecodingRefusesMistakes: the check can fail. A misspelled
// field, an unknown field, a duplicate key and a wrong type are refused in
// a copy of the shipped manifests, and in the agent-sandbox kinds too.
func TestStrictDecodingRefusesMistakes(t *testing.T) {
	sts, err := os.ReadFile("kubernetes/trl.yaml")
	if err != nil {
		t.Fatal(err)
	}
	sandbox, err := os.ReadFile("agent-sandbox/trl.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name     string
		src      []byte
		from, to string
	}{
		{"misspelled container field", sts, "containerPort:", "containerport:"},
		{"unknown pod field", sts, "automountServiceAccountToken: false", "automountServiceAccountToken: false\n      hostPID: false\n      runAsRoot: false"},
		{"duplicate key", sts, "podManagementPolicy: Parallel", "podManagementPolicy: Parallel\n  podManagementPolicy: OrderedReady"},
		{"wrong type", sts, "replicas: 2", "replicas: two"},
		{"misspelled template field", sandbox, "sandboxTemplateRef:", "templateRef:"},
		{"misspelled network policy field", sandbox, "networkPolicyManagement: Managed", "networkPolicyManagment: Managed"},
		{"pod spec inside a SandboxTemplate", sandbox, "readOnlyRootFilesystem: true", "readOnlyRootFS: true"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if !bytes.Contains(c.src, []byte(c.from)) {
				t.Fatalf("the manifest no longer has %q to break", c.from)
			}
			broken := bytes.Replace(c.src, []byte(c.from), []byte(c.to), 1)
			if _, err := decodeStrict(broken); err == nil {
				t.Errorf("replacing %q with %q went unnoticed", c.from, c.to)
			}
		})
	}
}

// TestHelmRendersDecodeStrictly renders the chart with the values a user
// is likely to set, and decodes every render strictly. It needs the helm
// `make lint-deploy` builds (bin/tools/helm-*), or helm on PATH.
func TestHelmRendersDecodeStrictly(t *testing.T) {
	helm := ""
	if m, _ := filepath.Glob("../bin/tools/helm-*"); len(m) > 0 {
		helm = m[len(m)-1]
	} else if p, err := exec.LookPath("helm"); err == nil {
		helm = p
	} else {
		t.Skip("no helm: run `make lint-deploy` (it builds a pinned helm into bin/tools) or put helm on PATH")
	}
	for _, c := range []struct {
		name     string
		set      []string
		isolated bool
	}{
		{"defaults", []string{"auth.token=t"}, false},
		{"existing secret", []string{"auth.existingSecret=trl-token"}, false},
		{"isolated", []string{"auth.token=t", "isolation.enabled=true", "isolation.uidRange=3000000000-3000000999", "isolation.nproc=64"}, true},
		{"isolated without cgroup delegation", []string{"auth.token=t", "isolation.enabled=true", "isolation.cgroupDelegation=false"}, true},
		{"no policy objects", []string{"auth.token=t", "networkPolicy.enabled=false", "podDisruptionBudget.enabled=false"}, false},
		{"placement and extra args", []string{"auth.token=t", "nodeSelector.pool=sandboxes", "tolerations[0].key=sandbox", "tolerations[0].operator=Exists", "extraArgs[0]=--audit-log", "extraArgs[1]=/tmp/audit.jsonl"}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			args := []string{"template", "trl", "helm/trl"}
			for _, s := range c.set {
				args = append(args, "--set", s)
			}
			out, err := exec.Command(helm, args...).Output()
			if err != nil {
				t.Fatalf("helm %v: %v", args, err)
			}
			docs, err := decodeStrict(out)
			if err != nil {
				t.Fatal(err)
			}
			checkVariant(t, docs, c.isolated)
		})
	}
}
