// Packs indexed without recursion, for the per-layer lists of a network (weights, states, layer types). An imported
// model has well over a hundred layers, and std::tuple / std::tuple_element cost compile time that grows faster than
// the layer count: std::get<I> converts through a chain of I nested bases, and GCC's -Wsequence-point check (in
// -Wall) walks that chain super-linearly (docs/decisions.md, "Flat per-layer packs"). Here every element is a direct
// base, so element<I> is one derived-to-base step, and type_at picks a type by overload resolution.
#pragma once

#include <algorithm>
#include <cstddef>
#include <type_traits>
#include <utility>

#include "mosaiq/simd/target.hpp"

namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE::detail {

template <std::size_t I, class T>
struct indexed_leaf {
  T value;
};

template <class Indices, class... T>
struct indexed_tuple_bases;
template <std::size_t... I, class... T>
struct indexed_tuple_bases<std::index_sequence<I...>, T...> : indexed_leaf<I, T>... {
  static constexpr std::size_t size = sizeof...(T);
};

/// An aggregate holding one T of each kind in order: `indexed_tuple<A, B>{{a}, {b}}` initialises its
/// elements left to right; element<I>(t) reads one.
template <class... T>
using indexed_tuple = indexed_tuple_bases<std::index_sequence_for<T...>, T...>;

template <std::size_t I, class T>
constexpr T& element(indexed_leaf<I, T>& leaf) noexcept {
  return leaf.value;
}
template <std::size_t I, class T>
constexpr const T& element(const indexed_leaf<I, T>& leaf) noexcept {
  return leaf.value;
}

/// Indices per fold expression over a network's layers. clang instantiates a fold of N elements as an expression
/// nested N deep and rejects more than 256 (-fbracket-depth): folds over layers go through for_index_chunks, whose
/// folds hold at most this many elements.
inline constexpr std::size_t fold_chunk = 64;

template <std::size_t Offset, std::size_t... I>
constexpr std::index_sequence<(Offset + I)...> offset_sequence(std::index_sequence<I...>) noexcept {
  return {};
}

/// f(std::index_sequence<...>) for consecutive chunks of [0, N) of at most fold_chunk indices, in order: f folds over
/// its chunk. Up to fold_chunk indices, one call with std::make_index_sequence<N> (the plain fold, the same code).
template <std::size_t N, class F>
[[gnu::always_inline]] constexpr void for_index_chunks(F&& f) {
  if constexpr (N <= fold_chunk) {
    f(std::make_index_sequence<N>{});
  } else {
    constexpr std::size_t chunks = (N + fold_chunk - 1) / fold_chunk;
    static_assert(chunks <= fold_chunk * 4, "mosaiq: more than 16384 layers");
    [&]<std::size_t... C>(std::index_sequence<C...>) {
      (f(offset_sequence<C * fold_chunk>(std::make_index_sequence<std::min(fold_chunk, N - C * fold_chunk)>{})), ...);
    }
    (std::make_index_sequence<chunks>{});
  }
}

/// f(std::type_identity<T>{}) for each of T..., in order: a braced list (evaluated left to right), not a fold, so
/// no nesting limit applies.
template <class... T, class F>
constexpr void for_each_type(F&& f) {
  [[maybe_unused]] const int in_order[] = {0, (f(std::type_identity<T>{}), 0)...};
}

/// f(element) for every element of an indexed_tuple, in index order.
template <class Tuple, class F>
constexpr void for_each_element(Tuple& t, F&& f) {
  for_index_chunks<std::remove_const_t<Tuple>::size>([&]<std::size_t... I>(std::index_sequence<I...>) {
    (f(element<I>(t)), ...);
  });
}

template <std::size_t I, class T>
struct indexed_type {
  using type = T;
};
template <class Indices, class... T>
struct type_index;
template <std::size_t... I, class... T>
struct type_index<std::index_sequence<I...>, T...> : indexed_type<I, T>... {};
template <std::size_t I, class T>
indexed_type<I, T> select_type(const indexed_type<I, T>&);  // declared only: named in decltype

/// The I-th type of T...
template <std::size_t I, class... T>
using type_at = typename decltype(select_type<I>(type_index<std::index_sequence_for<T...>, T...>{}))::type;

/// The type of element I of an indexed_tuple.
template <std::size_t I, class Tuple>
using element_type = std::remove_cvref_t<decltype(element<I>(std::declval<Tuple&>()))>;

}  // namespace mosaiq::inline MOSAIQ_TARGET_NAMESPACE::detail
