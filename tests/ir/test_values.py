def test_values_equal_compares_host_floats_with_the_tolerances():
    from acrobat import values_equal

    assert not values_equal(0.6204199, 0.6204200)  # exact by default, as before
    assert values_equal(0.6204199, 0.6204200, rtol=1e-5)
    assert values_equal((1.0, float("nan")), (1.0 + 1e-9, float("nan")), atol=1e-6)
    assert not values_equal(1.0, 1.1, rtol=1e-3, atol=1e-4)
    assert values_equal(3, 3.0) and not values_equal(3, 4, rtol=0.5)  # ints stay exact
