import pytest
from navd_client import NotAllowed

@pytest.mark.navd_graph("Examples/shop")
def test_product_then_reviews(navd_client):
    tree = navd_client.subscribe()
    navd_client.navigate("shop.Product", with_={"id": "p42"})
    navd_client.navigate("shop.Reviews")            # productId filled in from the product
    assert tree.stack[-2:] == ["shop.Product", "shop.Reviews"]
    assert tree.top["params"] == {"productId": "p42"}
    with pytest.raises(NotAllowed):
        navd_client.navigate("account.Admin")
