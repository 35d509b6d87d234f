"""dagrun_dependencies(): the external repositories dagrun's build needs, for
dagrun's own WORKSPACE and for any workspace that depends on dagrun:

    local_repository(name = "dagrun", path = "/path/to/dagrun")
    load("@dagrun//:deps.bzl", "dagrun_dependencies")
    dagrun_dependencies()

Bazel does not read a dependency's WORKSPACE, hence the macro. Nothing here
downloads: @glib, @yaml, @mpi and @cuda come from the system (Debian's static
GLib and libyaml and its Open MPI under /usr, the CUDA toolkit at
/usr/local/cuda), and
@rules_cc and @remote_coverage_tools, which Bazel 4 would otherwise
download, are dagrun's local stand-ins (third_party/bazel/). A repository
the workspace already declares under one of these names is left alone (so a
consumer can bring its own GLib, say)."""

def _vendored_impl(ctx):
    # The stand-in's directory inside the dagrun checkout, wherever that is.
    marker = ctx.path(Label("@dagrun//third_party/bazel/%s:BUILD" % ctx.attr.dir))
    for child in marker.dirname.readdir():
        ctx.symlink(child, child.basename)

_vendored = repository_rule(
    implementation = _vendored_impl,
    attrs = {"dir": attr.string(mandatory = True)},
    local = True,
)

def dagrun_dependencies():
    """Declares @glib, @yaml, @mpi, @cuda, @rules_cc and @remote_coverage_tools
    where the workspace has not declared them already."""
    have = native.existing_rules()
    for name, build_file, path in [
        ("glib", "@dagrun//third_party:glib.BUILD", "/usr"),
        ("yaml", "@dagrun//third_party:yaml.BUILD", "/usr"),
        ("cuda", "@dagrun//third_party:cuda.BUILD", "/usr/local/cuda"),
        ("mpi", "@dagrun//third_party:mpi.BUILD", "/usr"),
    ]:
        if name not in have:
            native.new_local_repository(name = name, build_file = build_file, path = path)
    for name in ["rules_cc", "remote_coverage_tools"]:
        if name not in have:
            _vendored(name = name, dir = name)
