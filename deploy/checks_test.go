package deploy

import (
	"go/ast"
	"go/parser"
	"go/token"
	"net"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// What every ringcast pod is promised to have.
const (
	ringcastImage = "ghcr.io/ringcast/ringcast:"
	listenAddr    = "0.0.0.0:8080"
	listenPort    = 8080
	nonRootUser   = 65532
	// margin is the least time terminationGracePeriodSeconds leaves after
	// the preStop sleep, --shutdown-delay and --shutdown-grace.
	margin = 5 * time.Second
)

// workload is a StatefulSet or a Deployment.
type workload struct {
	object
	replicas    int32
	selector    *metav1.LabelSelector
	pod         *corev1.PodTemplateSpec
	claims      []corev1.PersistentVolumeClaim
	serviceName string // a StatefulSet's
}

func workloads(objs []object) []workload {
	var out []workload
	for _, o := range objs {
		switch w := o.obj.(type) {
		case *appsv1.StatefulSet:
			out = append(out, workload{o, replicas(w.Spec.Replicas), w.Spec.Selector, &w.Spec.Template, w.Spec.VolumeClaimTemplates, w.Spec.ServiceName})
		case *appsv1.Deployment:
			out = append(out, workload{o, replicas(w.Spec.Replicas), w.Spec.Selector, &w.Spec.Template, nil, ""})
		}
	}
	return out
}

func replicas(n *int32) int32 {
	if n == nil {
		return 1
	}
	return *n
}

// matches reports whether sel selects a pod with lbls; an empty or
// invalid selector selects nothing here.
func matches(t *testing.T, sel *metav1.LabelSelector, lbls map[string]string) bool {
	t.Helper()
	if sel == nil || (len(sel.MatchLabels) == 0 && len(sel.MatchExpressions) == 0) {
		return false
	}
	s, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil {
		t.Errorf("selector %v: %v", sel, err)
		return false
	}
	return s.Matches(labels.Set(lbls))
}

// selected is the workloads whose pods sel selects.
func selected(t *testing.T, ws []workload, sel *metav1.LabelSelector) []workload {
	var out []workload
	for _, w := range ws {
		if matches(t, sel, w.pod.Labels) {
			out = append(out, w)
		}
	}
	return out
}

// portOf is the container port p names (by name or number) in the pod.
func portOf(pod *corev1.PodSpec, p intstr.IntOrString) (int32, bool) {
	for _, c := range pod.Containers {
		for _, cp := range c.Ports {
			if (p.Type == intstr.String && cp.Name == p.StrVal) || (p.Type == intstr.Int && cp.ContainerPort == p.IntVal) {
				return cp.ContainerPort, true
			}
		}
	}
	return 0, false
}

// serveFlags are the flag names ringcast's commands define, read from the
// source of server/cmd/ringcast: every string literal given as a flag's
// name to a flag.FlagSet method.
func serveFlags(t *testing.T) map[string]bool {
	t.Helper()
	dir := filepath.Join("..", "server", "cmd", "ringcast")
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no Go files in %s: %v", dir, err)
	}
	define := map[string]int{} // method: index of the name argument
	for _, m := range []string{"Bool", "String", "Int", "Int64", "Uint", "Uint64", "Float64", "Duration", "Func", "BoolFunc"} {
		define[m], define[m+"Var"] = 0, 1
	}
	define["Var"], define["TextVar"] = 1, 1
	names := map[string]bool{}
	fset := token.NewFileSet()
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fset, f, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(file, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			i, ok := define[sel.Sel.Name]
			if !ok || len(call.Args) <= i {
				return true
			}
			if lit, ok := call.Args[i].(*ast.BasicLit); ok && lit.Kind == token.STRING {
				if s, err := strconv.Unquote(lit.Value); err == nil {
					names[s] = true
				}
			}
			return true
		})
	}
	for _, must := range []string{"addr", "auth", "jwt-key-file", "store", "shutdown-delay"} {
		if !names[must] {
			t.Fatalf("found no flag %q in %s: the way its flags are defined changed; update serveFlags", must, dir)
		}
	}
	return names
}

// flagArgs reads a container's args: each --name=value (the one form that
// reads the same for every flag, booleans included), each name one of
// ringcast's flags.
func flagArgs(t *testing.T, where string, args []string, known map[string]bool) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, a := range args {
		name, val, ok := strings.Cut(strings.TrimPrefix(a, "--"), "=")
		switch {
		case !strings.HasPrefix(a, "--") || !ok:
			t.Errorf("%s: arg %q: write each flag as --name=value", where, a)
		case !known[name]:
			t.Errorf("%s: arg %q: ringcast has no flag %q", where, a, name)
		case out[name] != "":
			t.Errorf("%s: --%s given twice", where, name)
		default:
			out[name] = val
		}
	}
	return out
}

// TestPodsAreLockedDown checks every pod of every layout: the security
// context, resources, pinned images, probes on ports that exist, volumes
// that exist, and no Kubernetes credentials or service links.
func TestPodsAreLockedDown(t *testing.T) {
	for layout, objs := range layouts(t) {
		for _, w := range workloads(objs) {
			if !matches(t, w.selector, w.pod.Labels) {
				t.Errorf("%s: the selector does not select the pod template's labels", w.where)
			}
			checkPod(t, layout+"/"+w.obj.GetName(), w)
		}
	}
}

func checkPod(t *testing.T, where string, w workload) {
	spec := &w.pod.Spec
	if spec.AutomountServiceAccountToken == nil || *spec.AutomountServiceAccountToken {
		t.Errorf("%s: automountServiceAccountToken is not false", where)
	}
	if spec.EnableServiceLinks == nil || *spec.EnableServiceLinks {
		t.Errorf("%s: enableServiceLinks is not false (a Service named ringcast would set RINGCAST_* variables, where ringcast reads its flags)", where)
	}
	psc := spec.SecurityContext
	if psc == nil {
		t.Errorf("%s: no pod securityContext", where)
		psc = &corev1.PodSecurityContext{}
	}
	if len(spec.InitContainers)+len(spec.EphemeralContainers) > 0 {
		t.Errorf("%s: init or ephemeral containers: check them here too", where)
	}
	volumes := map[string]bool{}
	for _, v := range spec.Volumes {
		volumes[v.Name] = true
	}
	for _, c := range w.claims {
		volumes[c.Name] = true
	}
	for _, c := range spec.Containers {
		cw := where + "/" + c.Name
		sc := c.SecurityContext
		if sc == nil {
			t.Errorf("%s: no container securityContext", cw)
			sc = &corev1.SecurityContext{}
		}
		// The container's settings win over the pod's.
		nonRoot, user, seccomp := psc.RunAsNonRoot, psc.RunAsUser, psc.SeccompProfile
		if sc.RunAsNonRoot != nil {
			nonRoot = sc.RunAsNonRoot
		}
		if sc.RunAsUser != nil {
			user = sc.RunAsUser
		}
		if sc.SeccompProfile != nil {
			seccomp = sc.SeccompProfile
		}
		if nonRoot == nil || !*nonRoot {
			t.Errorf("%s: runAsNonRoot is not true", cw)
		}
		if user == nil || *user != nonRootUser {
			t.Errorf("%s: runAsUser is not %d", cw, nonRootUser)
		}
		if seccomp == nil || seccomp.Type != corev1.SeccompProfileTypeRuntimeDefault {
			t.Errorf("%s: seccompProfile is not RuntimeDefault", cw)
		}
		if sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
			t.Errorf("%s: readOnlyRootFilesystem is not true", cw)
		}
		if sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
			t.Errorf("%s: allowPrivilegeEscalation is not false", cw)
		}
		if sc.Privileged != nil && *sc.Privileged {
			t.Errorf("%s: privileged", cw)
		}
		if sc.Capabilities == nil || len(sc.Capabilities.Drop) != 1 || sc.Capabilities.Drop[0] != "ALL" || len(sc.Capabilities.Add) > 0 {
			t.Errorf("%s: capabilities are not drop: [ALL] with none added", cw)
		}

		if !pinned(c.Image) {
			t.Errorf("%s: image %q: pin a tag (not latest) or a digest", cw, c.Image)
		}

		for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			req, okReq := c.Resources.Requests[r]
			lim, okLim := c.Resources.Limits[r]
			if !okReq || !okLim || req.IsZero() || lim.IsZero() {
				t.Errorf("%s: %s needs a request and a limit", cw, r)
			} else if req.Cmp(lim) > 0 {
				t.Errorf("%s: %s request %s above its limit %s", cw, r, req.String(), lim.String())
			}
		}
		for _, e := range c.Env {
			if e.Name != "GOMEMLIMIT" {
				continue
			}
			lim := c.Resources.Limits[corev1.ResourceMemory]
			b, ok := goMemLimit(e.Value)
			if !ok || b >= lim.Value() {
				t.Errorf("%s: GOMEMLIMIT %q is not a size below the memory limit %s", cw, e.Value, lim.String())
			}
		}

		for name, p := range map[string]*corev1.Probe{"startup": c.StartupProbe, "readiness": c.ReadinessProbe, "liveness": c.LivenessProbe} {
			if p == nil {
				if name != "startup" {
					t.Errorf("%s: no %s probe", cw, name)
				}
				continue
			}
			if p.HTTPGet == nil {
				t.Errorf("%s: %s probe is not an HTTP GET", cw, name)
				continue
			}
			if _, ok := portOf(spec, p.HTTPGet.Port); !ok {
				t.Errorf("%s: %s probe's port %s is no container port", cw, name, p.HTTPGet.Port.String())
			}
		}
		for _, m := range c.VolumeMounts {
			if !volumes[m.Name] {
				t.Errorf("%s: mounts volume %q, which the pod does not have", cw, m.Name)
			}
		}
	}
}

// imageName is an image reference's last path element without its tag
// or digest ("ringcast" for registry.example.org:5000/team/ringcast:v1).
func imageName(ref string) string {
	name, _, _ := strings.Cut(ref[strings.LastIndex(ref, "/")+1:], "@")
	name, _, _ = strings.Cut(name, ":")
	return name
}

// pinned reports whether an image reference names a tag other than
// latest, or a digest.
func pinned(ref string) bool {
	if _, digest, ok := strings.Cut(ref, "@sha256:"); ok {
		return digest != ""
	}
	_, tag, ok := strings.Cut(ref[strings.LastIndex(ref, "/")+1:], ":")
	return ok && tag != "" && tag != "latest"
}

// goMemLimit reads a GOMEMLIMIT value: bytes, or a number with B, KiB,
// MiB, GiB or TiB.
func goMemLimit(s string) (int64, bool) {
	for i, unit := range []string{"TiB", "GiB", "MiB", "KiB", "B"} {
		if n, ok := strings.CutSuffix(s, unit); ok {
			v, err := strconv.ParseInt(n, 10, 64)
			return v << (10 * (4 - i)), err == nil
		}
	}
	v, err := strconv.ParseInt(s, 10, 64)
	return v, err == nil
}

// ringcastPod is a workload's ringcast container and its flags.
type ringcastPod struct {
	workload
	c     *corev1.Container
	flags map[string]string
}

func ringcastPods(t *testing.T, objs []object, known map[string]bool) []ringcastPod {
	var out []ringcastPod
	for _, w := range workloads(objs) {
		for i := range w.pod.Spec.Containers {
			if c := &w.pod.Spec.Containers[i]; c.Name == "ringcast" {
				out = append(out, ringcastPod{w, c, flagArgs(t, w.where, c.Args, known)})
			}
		}
	}
	return out
}

// TestRingcastPods checks what the ringcast container of each layout
// runs: its image, the address, auth with the key from the Secret, no
// demo, the store (on the claim, or on the NATS cluster of the layout),
// the probes and the shutdown's timings.
func TestRingcastPods(t *testing.T) {
	known := serveFlags(t)
	stores := map[string]string{}
	for layout, objs := range layouts(t) {
		pods := ringcastPods(t, objs, known)
		if len(pods) != 1 {
			t.Errorf("%s: %d ringcast workloads, want 1", layout, len(pods))
			continue
		}
		p := pods[0]
		where := layout + "/" + p.obj.GetName()
		f := p.flags
		stores[layout] = f["store"]

		if imageName(p.c.Image) != "ringcast" || len(p.c.Command) > 0 {
			t.Errorf("%s: image %q command %q: want ringcast's image (%s<tag>, or yours of that name) with its entrypoint (ringcast serve) unchanged", where, p.c.Image, p.c.Command, ringcastImage)
		}
		if f["addr"] != listenAddr {
			t.Errorf("%s: --addr=%q, want %s", where, f["addr"], listenAddr)
		}
		if port, ok := portOf(&p.pod.Spec, intstr.FromString("http")); !ok || port != listenPort {
			t.Errorf("%s: no container port named http on %d", where, listenPort)
		}
		// --demo=false whichever default serve has; nothing if serve has
		// no such flag.
		if _, set := f["demo"]; (known["demo"] || set) && f["demo"] != "false" {
			t.Errorf("%s: --demo=%q, want false: no demo feed in a deployed stream", where, f["demo"])
		}
		if f["auth"] != "jwt" {
			t.Errorf("%s: --auth=%q, want jwt", where, f["auth"])
		}
		checkKeyFromSecret(t, where, objs, p)

		checkProbe(t, where, "readiness", p.c.ReadinessProbe, "/readyz", &p.pod.Spec)
		checkProbe(t, where, "liveness", p.c.LivenessProbe, "/healthz", &p.pod.Spec)
		if p.c.StartupProbe != nil {
			checkProbe(t, where, "startup", p.c.StartupProbe, "/healthz", &p.pod.Spec)
		}
		checkShutdown(t, where, p)

		switch f["store"] {
		case "embedded":
			checkEmbedded(t, where, p)
		case "jetstream":
			checkJetStream(t, where, objs, p)
		default:
			t.Errorf("%s: --store=%q: want embedded or jetstream (memory loses every commit with the pod)", where, f["store"])
		}
	}
	if stores["single"] != "embedded" || stores["cluster"] != "jetstream" {
		t.Errorf("stores by layout %v: want single embedded, cluster jetstream", stores)
	}
}

func checkProbe(t *testing.T, where, name string, p *corev1.Probe, path string, spec *corev1.PodSpec) {
	t.Helper()
	if p == nil || p.HTTPGet == nil {
		t.Errorf("%s: no %s HTTP probe", where, name)
		return
	}
	if p.HTTPGet.Path != path {
		t.Errorf("%s: %s probe on %q, want %s", where, name, p.HTTPGet.Path, path)
	}
	if port, _ := portOf(spec, p.HTTPGet.Port); port != listenPort {
		t.Errorf("%s: %s probe on port %s, want %d", where, name, p.HTTPGet.Port.String(), listenPort)
	}
	if p.HTTPGet.Scheme != "" && p.HTTPGet.Scheme != corev1.URISchemeHTTP {
		t.Errorf("%s: %s probe scheme %s, want HTTP", where, name, p.HTTPGet.Scheme)
	}
}

// checkKeyFromSecret checks that --jwt-key-file is a file of a Secret
// volume, and that the Secret (in deploy/) has that key.
func checkKeyFromSecret(t *testing.T, where string, objs []object, p ringcastPod) {
	keyFile := p.flags["jwt-key-file"]
	dir, base := path.Split(keyFile)
	dir = strings.TrimSuffix(dir, "/")
	var vol string
	for _, m := range p.c.VolumeMounts {
		if m.MountPath == dir && m.SubPath == "" {
			vol = m.Name
			if !m.ReadOnly {
				t.Errorf("%s: the key's volume is mounted read-write", where)
			}
		}
	}
	var secret *corev1.SecretVolumeSource
	for _, v := range p.pod.Spec.Volumes {
		if v.Name == vol {
			secret = v.Secret
		}
	}
	if vol == "" || secret == nil {
		t.Errorf("%s: --jwt-key-file=%q is not in a directory where a Secret volume is mounted", where, keyFile)
		return
	}
	key := base
	for _, it := range secret.Items {
		if it.Path == base {
			key = it.Key
		}
	}
	for _, o := range objs {
		if s, ok := o.obj.(*corev1.Secret); ok && s.Name == secret.SecretName {
			_, inData := s.Data[key]
			_, inString := s.StringData[key]
			if !inData && !inString {
				t.Errorf("%s: Secret %s has no key %q for --jwt-key-file=%s", where, s.Name, key, keyFile)
			}
			return
		}
	}
	t.Errorf("%s: no Secret %s (the template %s) for --jwt-key-file", where, secret.SecretName, secretTemplate)
}

// TestApplyCannotOverwriteTheSecret: nothing `kubectl apply -f deploy/`
// reads (-R included: every .json, .yaml and .yml file under deploy/) is
// a Secret, so applying the manifests never replaces the real key with the
// template's placeholder; the template is a file kubectl skips, and the
// Secret is made with `kubectl create secret`, which refuses to replace
// one that exists.
func TestApplyCannotOverwriteTheSecret(t *testing.T) {
	for _, o := range load(t) {
		if _, ok := o.obj.(*corev1.Secret); ok {
			t.Errorf("%s: a Secret that kubectl apply -f deploy/ would apply over the real one", o.where)
		}
	}
	if applied(secretTemplate) {
		t.Errorf("%s: kubectl apply -f deploy/ reads it", secretTemplate)
	}
	if len(loadFile(t, secretTemplate)) == 0 {
		t.Errorf("%s holds no Secret", secretTemplate)
	}
}

// checkShutdown checks the timings of docs/reliability.md: SIGKILL only
// after the preStop sleep, --shutdown-delay and --shutdown-grace and a
// margin; liveness not failing within the shutdown; the delay covering the
// readiness probe's failures.
func checkShutdown(t *testing.T, where string, p ringcastPod) {
	dur := func(flag string) time.Duration {
		d, err := time.ParseDuration(p.flags[flag])
		if err != nil {
			t.Errorf("%s: --%s=%q: %v (set it: the timings depend on it)", where, flag, p.flags[flag], err)
		}
		return d
	}
	delay, grace := dur("shutdown-delay"), dur("shutdown-grace")
	var sleep time.Duration
	if l := p.c.Lifecycle; l != nil && l.PreStop != nil {
		switch ps := l.PreStop; {
		case ps.Sleep != nil:
			sleep = time.Duration(ps.Sleep.Seconds) * time.Second
		default:
			t.Errorf("%s: a preStop hook other than sleep: its length is unknown here (the image has no shell; use --shutdown-delay)", where)
		}
	}
	tgps := 30 * time.Second
	if s := p.pod.Spec.TerminationGracePeriodSeconds; s != nil {
		tgps = time.Duration(*s) * time.Second
	}
	if need := sleep + delay + grace + margin; tgps < need {
		t.Errorf("%s: terminationGracePeriodSeconds %s < preStop %s + --shutdown-delay %s + --shutdown-grace %s + %s: SIGKILL, not the grace period, would end the drain", where, tgps, sleep, delay, grace, margin)
	}
	if delay+sleep == 0 {
		t.Errorf("%s: neither --shutdown-delay nor a preStop sleep: new clients are refused while proxies still send them here", where)
	}
	if r := p.c.ReadinessProbe; r != nil && delay > 0 {
		if fails := probeSpan(r); delay < fails {
			t.Errorf("%s: --shutdown-delay %s shorter than the readiness probe's period x failure threshold %s", where, delay, fails)
		}
	}
	if l := p.c.LivenessProbe; l != nil {
		if fails := probeSpan(l); fails <= sleep+delay+grace {
			t.Errorf("%s: liveness fails after %s, within the shutdown (%s): keep it longer", where, fails, sleep+delay+grace)
		}
	}
}

// probeSpan is how long a probe takes to fail: period x failure threshold
// (the API's defaults: 10s, 3).
func probeSpan(p *corev1.Probe) time.Duration {
	period, fails := p.PeriodSeconds, p.FailureThreshold
	if period == 0 {
		period = 10
	}
	if fails == 0 {
		fails = 3
	}
	return time.Duration(period*fails) * time.Second
}

// claimFor is the volume claim template mounted at dir (or a parent of
// it) in c.
func claimFor(w workload, c *corev1.Container, dir string) (corev1.PersistentVolumeClaim, string, bool) {
	for _, m := range c.VolumeMounts {
		if dir != m.MountPath && !strings.HasPrefix(dir, strings.TrimSuffix(m.MountPath, "/")+"/") {
			continue
		}
		for _, pvc := range w.claims {
			if pvc.Name == m.Name {
				return pvc, m.MountPath, true
			}
		}
	}
	return corev1.PersistentVolumeClaim{}, "", false
}

func checkEmbedded(t *testing.T, where string, p ringcastPod) {
	if _, ok := p.obj.(*appsv1.StatefulSet); !ok || p.replicas != 1 {
		t.Errorf("%s: the embedded store has one writer: want a StatefulSet of 1 replica, have %s of %d", where, p.kind, p.replicas)
	}
	pvc, _, ok := claimFor(p.workload, p.c, p.flags["data-dir"])
	if !ok {
		t.Errorf("%s: --data-dir=%q is not on a volume claim", where, p.flags["data-dir"])
		return
	}
	// The embedded server's storage limit is 75% of the volume's free
	// space at its first start, and a fresh filesystem's free space is
	// below its size: at most 65% of the claim is sure to be taken.
	size := pvc.Spec.Resources.Requests[corev1.ResourceStorage]
	checkFits(t, where, p.flags["nats-max-bytes"], *resource.NewQuantity(size.Value()*65/100+1, resource.BinarySI), "65% of the claim")
}

// checkFits checks that --nats-max-bytes is set and below size.
func checkFits(t *testing.T, where, maxBytes string, size resource.Quantity, of string) {
	t.Helper()
	n, err := strconv.ParseInt(maxBytes, 10, 64)
	if err != nil || n <= 0 {
		t.Errorf("%s: --nats-max-bytes=%q: bound the stream below the size of %s", where, maxBytes, of)
	} else if size.IsZero() || n >= size.Value() {
		t.Errorf("%s: --nats-max-bytes=%d does not fit in %s (%s)", where, n, of, size.String())
	}
}

// checkJetStream checks ringcast's NATS URLs against the layout's NATS
// Service and StatefulSet, the replicas against the servers, and the
// NATS configuration against the pods (parsed by the nats-server that
// ringcast embeds).
func checkJetStream(t *testing.T, where string, objs []object, p ringcastPod) {
	if p.flags["nats-replicas"] != "3" {
		t.Errorf("%s: --nats-replicas=%q, want 3", where, p.flags["nats-replicas"])
	}
	var nats *workload
	for _, w := range workloads(objs) {
		if w.obj.GetName() == "nats" {
			nats = &w
		}
	}
	if nats == nil {
		t.Errorf("%s: no nats StatefulSet in the layout", where)
		return
	}
	if nats.replicas < 3 {
		t.Errorf("%s: %d NATS servers for an R3 stream", where, nats.replicas)
	}
	for _, raw := range strings.Split(p.flags["nats-url"], ",") {
		u, err := url.Parse(raw)
		if err != nil || u.Scheme != "nats" {
			t.Errorf("%s: --nats-url %q: want nats://SERVICE:PORT", where, raw)
			continue
		}
		host, port, _ := net.SplitHostPort(u.Host)
		svc := service(objs, strings.Split(host, ".")[0])
		if svc == nil {
			t.Errorf("%s: --nats-url %q: no Service %s in the layout", where, raw, host)
			continue
		}
		if len(selected(t, []workload{*nats}, &metav1.LabelSelector{MatchLabels: svc.Spec.Selector})) == 0 {
			t.Errorf("%s: --nats-url %q: Service %s does not select the NATS pods", where, raw, svc.Name)
		}
		found := false
		for _, sp := range svc.Spec.Ports {
			if strconv.Itoa(int(sp.Port)) == port {
				target, _ := portOf(&nats.pod.Spec, sp.TargetPort)
				found = target == 4222
			}
		}
		if !found {
			t.Errorf("%s: --nats-url %q: Service %s has no port %s to the NATS client port", where, raw, svc.Name, port)
		}
	}
	checkNATSConfig(t, objs, *nats, p)
}

func service(objs []object, name string) *corev1.Service {
	for _, o := range objs {
		if s, ok := o.obj.(*corev1.Service); ok && s.Name == name {
			return s
		}
	}
	return nil
}

// checkNATSConfig parses nats.conf from its ConfigMap as nats-0 would and
// checks it against the StatefulSet: the ports, a route to every pod
// through the governing headless Service, JetStream on the claim with room
// for ringcast's stream, the pid file lame duck mode signals on a
// writable volume, and lame duck mode inside the grace period.
func checkNATSConfig(t *testing.T, objs []object, nats workload, p ringcastPod) {
	where := "nats"
	c := &nats.pod.Spec.Containers[0]
	var cfgVol string
	for _, v := range nats.pod.Spec.Volumes {
		if v.ConfigMap != nil {
			cfgVol = v.ConfigMap.Name
		}
	}
	var conf string
	for _, o := range objs {
		if cm, ok := o.obj.(*corev1.ConfigMap); ok && cm.Name == cfgVol {
			conf = cm.Data["nats.conf"]
		}
	}
	if conf == "" {
		t.Fatalf("%s: no nats.conf in ConfigMap %q", where, cfgVol)
	}
	file := filepath.Join(t.TempDir(), "nats.conf")
	if err := os.WriteFile(file, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("POD_NAME", "nats-0")
	opts, err := server.ProcessConfigFile(file)
	if err != nil {
		t.Fatalf("%s: nats.conf: %v", where, err)
	}
	if opts.ServerName != "nats-0" {
		t.Errorf("%s: server_name %q, want the pod's name", where, opts.ServerName)
	}
	for name, port := range map[string]int{"client": opts.Port, "cluster": opts.Cluster.Port, "monitor": opts.HTTPPort} {
		if got, ok := portOf(&nats.pod.Spec, intstr.FromString(name)); !ok || int(got) != port {
			t.Errorf("%s: container port %s is %d, nats.conf says %d", where, name, got, port)
		}
	}
	headless := service(objs, nats.serviceName)
	if headless == nil || headless.Spec.ClusterIP != corev1.ClusterIPNone || !headless.Spec.PublishNotReadyAddresses {
		t.Errorf("%s: serviceName %q is not a headless Service publishing not-ready pods (routes form before readiness)", where, nats.serviceName)
	}
	want := map[string]bool{}
	for i := range nats.replicas {
		want[net.JoinHostPort(nats.obj.GetName()+"-"+strconv.Itoa(int(i))+"."+nats.serviceName, strconv.Itoa(opts.Cluster.Port))] = true
	}
	for _, r := range opts.Routes {
		if !want[r.Host] {
			t.Errorf("%s: route %s is none of the StatefulSet's pods", where, r)
		}
		delete(want, r.Host)
	}
	for r := range want {
		t.Errorf("%s: no route to %s", where, r)
	}
	if !opts.JetStream {
		t.Errorf("%s: JetStream is off", where)
	}
	pvc, _, ok := claimFor(nats, c, opts.StoreDir)
	if !ok {
		t.Errorf("%s: JetStream's store_dir %q is not on a volume claim", where, opts.StoreDir)
	} else if size := pvc.Spec.Resources.Requests[corev1.ResourceStorage]; opts.JetStreamMaxStore <= 0 || opts.JetStreamMaxStore >= size.Value() {
		t.Errorf("%s: max_file_store %d: set it below the claim's %s", where, opts.JetStreamMaxStore, size.String())
	}
	checkFits(t, "cluster/ringcast", p.flags["nats-max-bytes"], *resource.NewQuantity(opts.JetStreamMaxStore, resource.BinarySI), "max_file_store")

	pidDir := filepath.Dir(opts.PidFile)
	onEmptyDir := false
	for _, m := range c.VolumeMounts {
		for _, v := range nats.pod.Spec.Volumes {
			if v.Name == m.Name && m.MountPath == pidDir && v.EmptyDir != nil {
				onEmptyDir = true
			}
		}
	}
	if opts.PidFile == "" || !onEmptyDir {
		t.Errorf("%s: pid_file %q is not on an emptyDir (the root filesystem is read-only)", where, opts.PidFile)
	}
	if l := c.Lifecycle; l == nil || l.PreStop == nil || l.PreStop.Exec == nil || !strings.Contains(strings.Join(l.PreStop.Exec.Command, " "), "ldm="+opts.PidFile) {
		t.Errorf("%s: no preStop putting the server in lame duck mode through %s", where, opts.PidFile)
	}
	tgps := time.Duration(*nats.pod.Spec.TerminationGracePeriodSeconds) * time.Second
	if need := opts.LameDuckGracePeriod + opts.LameDuckDuration + margin; tgps < need {
		t.Errorf("%s: terminationGracePeriodSeconds %s < lame duck grace %s + duration %s + %s", where, tgps, opts.LameDuckGracePeriod, opts.LameDuckDuration, margin)
	}
}

// TestBudgetsServicesAndPolicies checks that every PodDisruptionBudget,
// Service and NetworkPolicy selects the pods it is for, on ports they have,
// and that a StatefulSet's service exists.
func TestBudgetsServicesAndPolicies(t *testing.T) {
	for layout, objs := range layouts(t) {
		ws := workloads(objs)
		budgets := map[string]int{}
		for _, o := range objs {
			where := o.where
			switch x := o.obj.(type) {
			case *policyv1.PodDisruptionBudget:
				sel := selected(t, ws, x.Spec.Selector)
				if len(sel) != 1 {
					t.Errorf("%s: selects %d workloads, want 1", where, len(sel))
					continue
				}
				budgets[sel[0].obj.GetName()]++
				if (x.Spec.MaxUnavailable == nil) == (x.Spec.MinAvailable == nil) {
					t.Errorf("%s: set one of maxUnavailable and minAvailable", where)
				}
				if sel[0].replicas > 1 {
					if m := x.Spec.MaxUnavailable; m == nil || m.IntValue() < 1 {
						t.Errorf("%s: %d replicas: let at least one go at a time (maxUnavailable)", where, sel[0].replicas)
					}
				}
			case *corev1.Service:
				sel := selected(t, ws, &metav1.LabelSelector{MatchLabels: x.Spec.Selector})
				if len(sel) != 1 {
					t.Errorf("%s: selects %d workloads, want 1", where, len(sel))
					continue
				}
				for _, sp := range x.Spec.Ports {
					if _, ok := portOf(&sel[0].pod.Spec, sp.TargetPort); !ok {
						t.Errorf("%s: port %s targets %s, which %s's pods do not have", where, sp.Name, sp.TargetPort.String(), sel[0].obj.GetName())
					}
				}
			case *networkingv1.NetworkPolicy:
				sel := selected(t, ws, &x.Spec.PodSelector)
				if len(sel) != 1 {
					t.Errorf("%s: applies to %d workloads, want 1", where, len(sel))
					continue
				}
				for _, rule := range x.Spec.Ingress {
					for _, from := range rule.From {
						if from.PodSelector != nil && len(selected(t, ws, from.PodSelector)) == 0 {
							t.Errorf("%s: a rule admits pods that no workload of the layout has (%v)", where, from.PodSelector.MatchLabels)
						}
					}
					for _, port := range rule.Ports {
						if port.Port == nil {
							t.Errorf("%s: a rule without a port", where)
						} else if _, ok := portOf(&sel[0].pod.Spec, *port.Port); !ok {
							t.Errorf("%s: a rule's port is none of %s's container ports", where, sel[0].obj.GetName())
						}
					}
				}
			}
		}
		for _, w := range ws {
			if budgets[w.obj.GetName()] != 1 {
				t.Errorf("%s/%s: %d PodDisruptionBudgets, want 1", layout, w.obj.GetName(), budgets[w.obj.GetName()])
			}
			if _, ok := w.obj.(*appsv1.StatefulSet); ok && w.serviceName != "" && service(objs, w.serviceName) == nil {
				t.Errorf("%s/%s: serviceName %q is no Service of the layout", layout, w.obj.GetName(), w.serviceName)
			}
		}
	}
}
