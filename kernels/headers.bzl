"""cc_headers: the header files of cc_library targets as plain files, so a
genrule (nvcc) can list another package's headers among its srcs without
that package exporting them one by one."""

def _cc_headers_impl(ctx):
    return [DefaultInfo(files = depset(transitive = [
        d[CcInfo].compilation_context.headers
        for d in ctx.attr.deps
    ]))]

cc_headers = rule(
    implementation = _cc_headers_impl,
    attrs = {"deps": attr.label_list(providers = [CcInfo])},
)
