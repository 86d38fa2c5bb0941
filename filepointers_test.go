package offheap

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestFilePointers checks the comments of every Go file of the repository
// that name a Go file ("the double-free key (doublefree.go)", a trailing
// "// sampling.go"): the file must exist, beside the comment or in a
// directory above it, at that path if it has one, and where the pointer
// names what it points to, the file must declare it. Two shapes name it:
//
//   - a pointer that is the whole comment after code, as in
//     "h.startSampling(m, c) // sampling.go": the file declares one of the
//     names that code uses, among those its package declares;
//   - a pointer after an unexported name with a capital inside, or after a
//     name with a dot ("publishMapped (pages.go)", "Heap.Close in
//     closing.go"): the file declares the name (a function, method, type,
//     variable or constant of its package), when the package declares it.
//     Other words (Free, block) may name the concept a file holds.
//
// A path whose first directory is none of the repository's (the Go
// runtime's, runtime/mgc.go) is another project's, and is not checked.
func TestFilePointers(t *testing.T) {
	if _, err := os.Stat("filepointers_test.go"); err != nil {
		// A test binary run away from its sources: under qemu, in a VM.
		t.Skipf("the package's sources are not in the working directory: %v", err)
	}
	byDir := map[string][]string{}
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != "." && strings.HasPrefix(d.Name(), ".") {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(path, ".go") {
			byDir[filepath.Dir(path)] = append(byDir[filepath.Dir(path)], path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	dirs := make([]string, 0, len(byDir))
	for d := range byDir {
		dirs = append(dirs, d)
	}
	slices.Sort(dirs)
	checked := 0
	for _, dir := range dirs {
		checked += checkFilePointers(t, dir, byDir[dir])
	}
	if checked < 100 {
		t.Errorf("%d file pointers checked, want the repository's hundreds", checked)
	}
}

var (
	// filePointer is a Go file's name, or a path ending in one, in a comment.
	filePointer = regexp.MustCompile(`(?:[A-Za-z0-9_.-]+/)*[a-z0-9][a-z0-9_]*\.go\b`)
	// namedPointer is a name just before a pointer: "name (X.go",
	// "name, X.go", "name in X.go".
	namedPointer = regexp.MustCompile(`([A-Za-z_][A-Za-z0-9_.]*)(?:\(\))?(?: \(| in |, )((?:[A-Za-z0-9_.-]+/)*[a-z0-9][a-z0-9_]*\.go)\b`)
	// codeName is a name a comment can only mean as code: an unexported
	// name with a capital inside (publishMapped), or one with a dot.
	codeName = regexp.MustCompile(`^(?:[a-z][a-z0-9_]*[A-Z][A-Za-z0-9_]*|[A-Za-z_][A-Za-z0-9_]*\.[A-Za-z_][A-Za-z0-9_.]*)$`)
	// goIdent is a name in a line of code.
	goIdent = regexp.MustCompile(`[A-Za-z_][A-Za-z0-9_]*`)
)

// checkFilePointers checks the pointers in the comments of one directory's
// files, whose declarations it collects first; it returns how many it
// checked.
func checkFilePointers(t *testing.T, dir string, files []string) int {
	t.Helper()
	fset := token.NewFileSet()
	parsed := map[string]*ast.File{}
	declaredIn := map[string]map[string]bool{} // file's base name -> names it declares
	declared := map[string]bool{}              // every name the directory declares
	for _, path := range files {
		f, err := parser.ParseFile(fset, path, nil, parser.ParseComments|parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		parsed[path] = f
		names := map[string]bool{}
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				names[d.Name.Name] = true
			case *ast.GenDecl:
				for _, s := range d.Specs {
					switch s := s.(type) {
					case *ast.TypeSpec:
						names[s.Name.Name] = true
					case *ast.ValueSpec:
						for _, n := range s.Names {
							names[n.Name] = true
						}
					}
				}
			}
		}
		declaredIn[filepath.Base(path)] = names
		for n := range names {
			declared[n] = true
		}
	}
	// up calls f with dir and each directory above it, up to the root,
	// until f returns true.
	up := func(f func(d string) bool) bool {
		for d := dir; ; d = filepath.Dir(d) {
			if f(d) {
				return true
			}
			if d == "." {
				return false
			}
		}
	}
	isFile := func(path string) bool { st, err := os.Stat(path); return err == nil && !st.IsDir() }
	exists := func(name string) bool {
		return up(func(d string) bool { return isFile(filepath.Join(d, name)) })
	}
	external := func(name string) bool { // another project's: runtime/mgc.go
		top, _, ok := strings.Cut(name, "/")
		return ok && !up(func(d string) bool { st, err := os.Stat(filepath.Join(d, top)); return err == nil && st.IsDir() })
	}
	checked := 0
	for _, path := range files {
		src, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(string(src), "\n")
		for _, cg := range parsed[path].Comments {
			for _, c := range cg.List {
				pos := fset.Position(c.Slash)
				text := c.Text
				for _, m := range filePointer.FindAllStringIndex(text, -1) {
					name := text[m[0]:m[1]]
					if m[0] > 0 && text[m[0]-1] == '_' || external(name) { // "a _test.go file"
						continue
					}
					checked++
					if !exists(name) {
						t.Errorf("%s:%d: the comment points to %s, which is no file of %s", path, pos.Line, name, dir)
					}
				}
				for _, m := range namedPointer.FindAllStringSubmatch(text, -1) {
					ident, name := m[1], m[2]
					if !codeName.MatchString(ident) {
						continue
					}
					ident = ident[strings.LastIndex(ident, ".")+1:]
					if !declared[ident] || strings.Contains(name, "/") || declaredIn[name] == nil {
						continue
					}
					if !declaredIn[name][ident] {
						t.Errorf("%s:%d: the comment points to %s for %s, which %s does not declare", path, pos.Line, name, ident, name)
					}
				}
				// A pointer alone after code: the code's names.
				name := strings.TrimSpace(strings.TrimPrefix(text, "//"))
				code := strings.TrimSpace(lines[pos.Line-1][:pos.Column-1])
				if code == "" || declaredIn[name] == nil {
					continue
				}
				var ours []string
				for _, id := range goIdent.FindAllString(code, -1) {
					if declared[id] {
						ours = append(ours, id)
					}
				}
				if len(ours) > 0 && !slices.ContainsFunc(ours, func(id string) bool { return declaredIn[name][id] }) {
					t.Errorf("%s:%d: %q points to %s, which declares none of %v", path, pos.Line, code+" "+text, name, ours)
				}
			}
		}
	}
	return checked
}
