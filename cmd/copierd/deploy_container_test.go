package main

import (
	"debug/elf"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// containerStage is one FROM … section of the Containerfile.
type containerStage struct {
	from, name   string
	instructions [][2]string // instruction (upper case), arguments
}

// parseContainerfile splits the Containerfile into stages (no line continuations are used).
func parseContainerfile(t *testing.T) []containerStage {
	t.Helper()
	var stages []containerStage
	for n, line := range strings.Split(readRepoFile(t, "Containerfile"), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if strings.HasSuffix(line, "\\") {
			t.Fatalf("Containerfile line %d: keep instructions on one line", n+1)
		}
		ins, args, _ := strings.Cut(line, " ")
		ins = strings.ToUpper(ins)
		if ins == "FROM" {
			from, name, _ := strings.Cut(args, " AS ")
			stages = append(stages, containerStage{from: strings.TrimSpace(from), name: strings.TrimSpace(name)})
			continue
		}
		if len(stages) == 0 {
			t.Fatalf("Containerfile line %d: %s before FROM", n+1, ins)
		}
		s := &stages[len(stages)-1]
		s.instructions = append(s.instructions, [2]string{ins, strings.TrimSpace(args)})
	}
	return stages
}

// TestContainerfile keeps the Containerfile honest where no builder can run (see
// docs/operating.md): the build stage runs exactly the README's build commands, and the
// go build among them, run here, makes a static binary; the image stage runs nothing (no
// shell), runs as a non-root user, and its HEALTHCHECK and entry point are the binary's
// own healthcheck and run commands.
func TestContainerfile(t *testing.T) {
	stages := parseContainerfile(t)
	if len(stages) != 2 || stages[0].name != "build" || stages[1].from != "scratch" {
		t.Fatalf("want a build stage and a scratch image stage, got %+v", stages)
	}
	readme := readRepoFile(t, "README.md")
	var goBuild string
	for _, in := range stages[0].instructions {
		if in[0] != "RUN" {
			continue
		}
		if !strings.Contains(readme, "\n"+in[1]+"\n") {
			t.Errorf("the build stage runs %q, which README.md's build commands lack", in[1])
		}
		if strings.Contains(in[1], "go build") {
			goBuild = in[1]
		}
	}
	if !strings.Contains(goBuild, "CGO_ENABLED=0 ") || !strings.Contains(goBuild, " -o copierd ./cmd/copierd") {
		t.Fatalf("the build stage's go build %q is not a static build of ./cmd/copierd to ./copierd", goBuild)
	}

	img := map[string][]string{}
	for _, in := range stages[1].instructions {
		img[in[0]] = append(img[in[0]], in[1])
	}
	if len(img["RUN"]) > 0 {
		t.Errorf("the image stage runs %q: it has no shell", img["RUN"])
	}
	if u := img["USER"]; len(u) != 1 || strings.HasPrefix(u[0], "0") || strings.HasPrefix(u[0], "root") {
		t.Errorf("USER %q: want one non-root numeric user", u)
	}
	if h := img["HEALTHCHECK"]; len(h) != 1 || !strings.HasSuffix(h[0], `CMD ["/copierd", "healthcheck"]`) {
		t.Errorf("HEALTHCHECK %q: want the exec form of /copierd healthcheck", h)
	}
	if e := img["ENTRYPOINT"]; len(e) != 1 || e[0] != `["/copierd"]` || len(img["CMD"]) != 1 || img["CMD"][0] != `["run"]` {
		t.Errorf("ENTRYPOINT %q CMD %q: want [\"/copierd\"] and [\"run\"]", e, img["CMD"])
	}
	if env := img["ENV"]; len(env) != 1 || env[0] != "COPIER_HTTP=:8080" || len(img["EXPOSE"]) != 1 || img["EXPOSE"][0] != "8080" {
		t.Errorf("ENV %q EXPOSE %q: the health check needs COPIER_HTTP, on the exposed port", env, img["EXPOSE"])
	}
	if !slices.Contains(img["COPY"], "--from=build /src/copierd /copierd") {
		t.Errorf("the image does not take the build stage's binary: COPY %q", img["COPY"])
	}

	// The build command, run as written (output into a temporary directory), makes a
	// statically linked executable.
	out := filepath.Join(t.TempDir(), "copierd")
	cmd := exec.Command("sh", "-c", strings.Replace(goBuild, " -o copierd ", " -o '"+out+"' ", 1))
	cmd.Dir = repoRoot
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", goBuild, err, b)
	}
	f, err := elf.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP || p.Type == elf.PT_DYNAMIC {
			t.Fatalf("%s is dynamically linked (%v)", out, p.Type)
		}
	}
}
