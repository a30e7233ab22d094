"""Row statistics kept with their unit dim, as users write them: JAX 0.12.0.1's own pass
rejects each (it cannot compute on an (N, 1) value in a tiled layout); smalto's unit-dim
rewrite lowers them, and ``smalto fix`` writes the statistics as (N,) values broadcast
where they meet the tile (``mu[..., None]``), which JAX's own pass lowers.

``layer_norm`` is jax#39966's kind, loaded straight from GMEM with no layout stated:
its fix also casts the load to the layout smalto's answer gives it. ``centered`` is
jax#39966's own line, ``x - jnp.mean(x, axis=-1, keepdims=True)``, alone: the same
fix, but JAX's own pass gives up on it in about a second (on ``layer_norm``, after
about 30 s of search). The others take
their tile in the WGMMA layout, as a kernel does after a wgmma."""

import jax
import jax.numpy as jnp
from jax.experimental.pallas import mosaic_gpu as plgpu

WARPGROUP = plgpu.CompilerParams(lowering_semantics=plgpu.LoweringSemantics.Warpgroup)


def _kernel(body, x):
    return plgpu.kernel(
        body, out_type=jax.ShapeDtypeStruct(x.shape, x.dtype), compiler_params=WARPGROUP
    )(x)


def layer_norm(x):
    def body(x_gmem, o_gmem):
        x = x_gmem[...]
        centered = x - jnp.mean(x, axis=-1, keepdims=True)
        var = jnp.mean(centered * centered, axis=-1, keepdims=True)
        o_gmem[...] = centered * jax.lax.rsqrt(var + 1e-5)

    return _kernel(body, x)


def centered(x):
    def body(x_gmem, o_gmem):
        x = x_gmem[...]
        o_gmem[...] = x - jnp.mean(x, axis=-1, keepdims=True)

    return _kernel(body, x)


def rms_norm(x):
    def body(x_gmem, o_gmem):
        x = plgpu.layout_cast(x_gmem[...], plgpu.Layout.WGMMA)
        ms = jnp.mean(x * x, axis=-1, keepdims=True)
        o_gmem[...] = x * jax.lax.rsqrt(ms + 1e-6)

    return _kernel(body, x)


def softmax(x):
    def body(x_gmem, o_gmem):
        x = plgpu.layout_cast(x_gmem[...], plgpu.Layout.WGMMA)
        m = jnp.max(x, axis=1, keepdims=True)
        e = jnp.exp(x - m)
        o_gmem[...] = e / jnp.sum(e, axis=1, keepdims=True)

    return _kernel(body, x)


def centered_by_reshape(x):
    def body(x_gmem, o_gmem):
        x = plgpu.layout_cast(x_gmem[...], plgpu.Layout.WGMMA)
        rows = x.shape[0]
        mu = jnp.sum(x, axis=1).reshape(rows, 1) * (1.0 / x.shape[1])
        o_gmem[...] = x - mu

    return _kernel(body, x)


def max_shifted_by_none(x):
    def body(x_gmem, o_gmem):
        x = plgpu.layout_cast(x_gmem[...], plgpu.Layout.WGMMA)
        m = jnp.max(x, axis=-1)[:, None]
        o_gmem[...] = jnp.maximum(x - (m - 1.0), 0.0)

    return _kernel(body, x)


def rms_norm_by_broadcast_to(x):
    """The scale broadcast to the tile by ``jnp.broadcast_to`` before it meets it."""

    def body(x_gmem, o_gmem):
        x = plgpu.layout_cast(x_gmem[...], plgpu.Layout.WGMMA)
        ms = jnp.mean(x * x, axis=-1, keepdims=True)
        scale = jnp.broadcast_to(jax.lax.rsqrt(ms + 1e-6), x.shape)
        o_gmem[...] = x * scale

    return _kernel(body, x)


def stored_statistics(x):
    """The (N, 1) statistic is stored too: no edit follows it (the output's shape)."""

    def body(x_gmem, o_gmem, mu_gmem):
        x = plgpu.layout_cast(x_gmem[...], plgpu.Layout.WGMMA)
        mu = jnp.mean(x, axis=-1, keepdims=True)
        o_gmem[...] = x - mu
        mu_gmem[...] = mu

    return plgpu.kernel(
        body,
        out_type=(
            jax.ShapeDtypeStruct(x.shape, x.dtype),
            jax.ShapeDtypeStruct((x.shape[0], 1), x.dtype),
        ),
        compiler_params=WARPGROUP,
    )(x)


def stored_mean(x):
    """The (N, 1) mean is stored as it is, beside the tile: no edit follows it (the
    output's shape). ``stored_statistics``' kind, with nothing for a cast to change (each
    cast JAX's pass rejects costs its whole failed search)."""

    def body(x_gmem, o_gmem, mu_gmem):
        x = plgpu.layout_cast(x_gmem[...], plgpu.Layout.WGMMA)
        mu = jnp.mean(x, axis=-1, keepdims=True)
        o_gmem[...] = x
        mu_gmem[...] = mu

    return plgpu.kernel(
        body,
        out_type=(
            jax.ShapeDtypeStruct(x.shape, x.dtype),
            jax.ShapeDtypeStruct((x.shape[0], 1), x.dtype),
        ),
        compiler_params=WARPGROUP,
    )(x)
