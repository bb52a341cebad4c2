// Package deploy holds ringcast's Kubernetes manifests (README.md) and the
// test that reads them as the API server would and checks what they promise.
package deploy

import (
	"fmt"
	"io/fs"
	"os"
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

// object is one YAML document of the manifests, decoded.
type object struct {
	where  string // file:document, for messages
	layout string // the directory under deploy/ ("" for deploy/ itself)
	kind   string
	obj    metav1.Object // a pointer to the typed object
}

// kinds are the objects the manifests may hold, by apiVersion and kind:
// anything else fails the test.
var kinds = map[string]func() metav1.Object{
	"v1/Namespace":                       func() metav1.Object { return &corev1.Namespace{} },
	"v1/Service":                         func() metav1.Object { return &corev1.Service{} },
	"v1/ConfigMap":                       func() metav1.Object { return &corev1.ConfigMap{} },
	"v1/Secret":                          func() metav1.Object { return &corev1.Secret{} },
	"apps/v1/StatefulSet":                func() metav1.Object { return &appsv1.StatefulSet{} },
	"apps/v1/Deployment":                 func() metav1.Object { return &appsv1.Deployment{} },
	"policy/v1/PodDisruptionBudget":      func() metav1.Object { return &policyv1.PodDisruptionBudget{} },
	"networking.k8s.io/v1/NetworkPolicy": func() metav1.Object { return &networkingv1.NetworkPolicy{} },
}

// docSep splits a YAML stream into documents.
var docSep = regexp.MustCompile(`(?m)^---[ \t]*(#.*)?$`)

// decode reads one YAML document as the API server does: YAML without
// duplicate keys, then JSON decoded case-sensitively into the type its
// apiVersion and kind name, every field known. It returns nil for a
// document of comments only.
func decode(doc []byte) (string, metav1.Object, error) {
	j, err := yaml.YAMLToJSONStrict(doc)
	if err != nil {
		return "", nil, err
	}
	if string(j) == "null" {
		return "", nil, nil
	}
	var tm metav1.TypeMeta
	if err := kjson.UnmarshalCaseSensitivePreserveInts(j, &tm); err != nil {
		return "", nil, err
	}
	newObj, ok := kinds[tm.APIVersion+"/"+tm.Kind]
	if !ok {
		return "", nil, fmt.Errorf("apiVersion %q kind %q: not a kind these manifests use (add it to kinds if it should be)", tm.APIVersion, tm.Kind)
	}
	obj := newObj()
	strict, err := kjson.UnmarshalStrict(j, obj)
	if err != nil {
		return "", nil, err
	}
	if len(strict) > 0 {
		return "", nil, fmt.Errorf("%s: %v", tm.Kind, strict)
	}
	return tm.Kind, obj, nil
}

// secretTemplate is the Secret's template. Its name does not end in a
// manifest's extension, so `kubectl apply -f deploy/` (with -R or
// without) never reads it and cannot overwrite a real Secret with it.
const secretTemplate = "jwt-key-secret.yaml.example"

// applied reports whether `kubectl apply -f DIR` reads the file: kubectl
// takes the files of a directory whose names end in .json, .yaml or .yml.
func applied(path string) bool {
	switch filepath.Ext(path) {
	case ".json", ".yaml", ".yml":
		return true
	}
	return false
}

// load decodes every document under deploy/ that `kubectl apply -f`
// applies (applied), subdirectories included, as `apply -R` does.
func load(t *testing.T) []object {
	t.Helper()
	var objs []object
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !applied(path) {
			return err
		}
		objs = append(objs, loadFile(t, path)...)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

// loadFile decodes every YAML document of one file.
func loadFile(t *testing.T, path string) []object {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var objs []object
	for i, doc := range docSep.Split(string(b), -1) {
		where := fmt.Sprintf("%s:%d", path, i+1)
		kind, obj, err := decode([]byte(doc))
		if err != nil {
			t.Errorf("%s: %v", where, err)
			continue
		}
		if obj == nil {
			continue
		}
		layout := filepath.Dir(path)
		if layout == "." {
			layout = ""
		}
		objs = append(objs, object{where: where, layout: layout, kind: kind, obj: obj})
	}
	return objs
}

func TestDecodeRefusesWhatTheAPIServerWould(t *testing.T) {
	for name, doc := range map[string]string{
		"unknown field":   "apiVersion: v1\nkind: Service\nmetadata: {name: x}\nspec: {selectr: {a: b}}\n",
		"field's case":    "apiVersion: v1\nkind: Service\nmetadata: {name: x}\nspec: {Selector: {a: b}}\n",
		"duplicate key":   "apiVersion: v1\nkind: Service\nmetadata: {name: x}\nmetadata: {name: y}\n",
		"unknown kind":    "apiVersion: v1\nkind: Pod\nmetadata: {name: x}\n",
		"unknown version": "apiVersion: apps/v1beta1\nkind: Deployment\nmetadata: {name: x}\n",
		"wrong type":      "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: x}\nspec: {replicas: two}\n",
		"bad quantity":    "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: x}\nspec: {template: {spec: {containers: [{name: a, resources: {limits: {memory: lots}}}]}}}\n",
	} {
		if _, _, err := decode([]byte(doc)); err == nil {
			t.Errorf("%s: decoded without error", name)
		}
	}
	if kind, obj, err := decode([]byte("# only a comment\n")); err != nil || obj != nil || kind != "" {
		t.Errorf("a document of comments: %q %v %v", kind, obj, err)
	}
}

// TestManifestsDecodeStrictly decodes every document and checks that the
// two layouts and the shared files are all there.
func TestManifestsDecodeStrictly(t *testing.T) {
	objs := load(t)
	have := map[string]bool{}
	for _, o := range objs {
		have[o.layout+" "+o.kind+" "+o.obj.GetName()] = true
		if o.obj.GetName() == "" {
			t.Errorf("%s: %s without a name", o.where, o.kind)
		}
		if o.layout != "" && o.obj.GetNamespace() != "" {
			t.Errorf("%s: names namespace %q; the layouts name none, so that kubectl -n picks it", o.where, o.obj.GetNamespace())
		}
	}
	for _, want := range []string{
		" Namespace ringcast",
		"single StatefulSet ringcast", "single Service ringcast", "single PodDisruptionBudget ringcast",
		"cluster Deployment ringcast", "cluster Service ringcast", "cluster PodDisruptionBudget ringcast",
		"cluster StatefulSet nats", "cluster Service nats", "cluster Service nats-headless",
		"cluster ConfigMap nats-config", "cluster PodDisruptionBudget nats", "cluster NetworkPolicy nats",
	} {
		if !have[want] {
			t.Errorf("no %s", strings.TrimSpace(want))
		}
	}
}

// minSecretBytes is the shortest HMAC secret ringcast takes as a key
// (server/internal/edge/auth.MinSecretBytes).
const minSecretBytes = 32

// TestSecretIsATemplate checks that the Secret template in the repository
// holds nothing a server would start with: its "hmac:" placeholder is
// shorter than a secret, so a server given it as it is refuses to start.
func TestSecretIsATemplate(t *testing.T) {
	n := 0
	for _, o := range loadFile(t, secretTemplate) {
		s, ok := o.obj.(*corev1.Secret)
		if !ok {
			continue
		}
		n++
		if len(s.Data) > 0 {
			t.Errorf("%s: data holds a value; a template has only its stringData placeholder", o.where)
		}
		for k, v := range s.StringData {
			secret, ok := strings.CutPrefix(strings.TrimSpace(v), "hmac:")
			if !ok || len(secret) >= minSecretBytes {
				t.Errorf("%s: %s is %q: want an \"hmac:\" placeholder shorter than %d bytes, which the server refuses", o.where, k, v, minSecretBytes)
			}
		}
	}
	if n == 0 {
		t.Error("no Secret template")
	}
}

// layouts groups the objects by directory; deploy/ itself (the
// Namespace) and the Secret template, which the operator creates the
// Secret from, belong to every layout.
func layouts(t *testing.T) map[string][]object {
	objs := load(t)
	shared := slices.DeleteFunc(slices.Clone(objs), func(o object) bool { return o.layout != "" })
	shared = append(shared, loadFile(t, secretTemplate)...)
	out := map[string][]object{}
	for _, o := range objs {
		if o.layout != "" {
			if out[o.layout] == nil {
				out[o.layout] = slices.Clone(shared)
			}
			out[o.layout] = append(out[o.layout], o)
		}
	}
	return out
}
